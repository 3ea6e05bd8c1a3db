// The palette: the catalog's kinds grouped in palette order, with a
// search box. Dragging a kind onto the canvas adds a node (X6 Dnd);
// double-click or Enter adds one in the middle of the view.

import { h, clear } from './dom.js'

export function renderPalette(el, catalog, canvas) {
  clear(el)
  el.classList.add('be-palette')
  const search = h('input', {
    type: 'search',
    class: 'be-palette-search',
    testid: 'palette-search',
    placeholder: 'Search operators…',
    'aria-label': 'Search operators',
  })
  const list = h('div', { class: 'be-palette-groups' })
  el.append(search, list)

  const items = []
  for (const [group, kinds] of catalog.groupedKinds()) {
    const groupEl = h('section', { class: 'be-palette-group', testid: `group-${group.replace(/\s+/g, '-')}` }, h('h3', { text: group }))
    const groupItems = []
    for (const kind of kinds) {
      const item = h(
        'div',
        {
          class: 'be-palette-item' + (kind.name === 'opaque' ? ' be-muted' : ''),
          testid: `palette-${kind.name}`,
          tabindex: '0',
          role: 'button',
          title: `${kind.description}\n(drag onto the canvas, or double-click)`,
          dataset: { kind: kind.name, group: kind.group },
        },
        h('span', { class: 'be-palette-title', text: kind.title }),
        h('span', { class: 'be-palette-name', text: kind.name }),
      )
      // The drag starts once the mouse has moved a little, so that a
      // double-click stays a double-click.
      item.addEventListener('mousedown', (down) => {
        if (down.button !== 0) return
        down.preventDefault()
        const move = (e) => {
          if (Math.abs(e.clientX - down.clientX) + Math.abs(e.clientY - down.clientY) < 4) return
          stop()
          canvas.startDrag(kind.name, e)
        }
        const stop = () => {
          document.removeEventListener('mousemove', move)
          document.removeEventListener('mouseup', stop)
        }
        document.addEventListener('mousemove', move)
        document.addEventListener('mouseup', stop)
      })
      item.addEventListener('dblclick', () => canvas.addNode(kind.name))
      item.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault()
          canvas.addNode(kind.name)
        }
      })
      const text = `${kind.name} ${kind.title} ${kind.group} ${kind.description}`.toLowerCase()
      groupItems.push({ item, text })
      items.push({ item, text, groupEl })
      groupEl.append(item)
    }
    groupEl._items = groupItems
    list.append(groupEl)
  }

  search.addEventListener('input', () => {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean)
    for (const it of items) it.item.hidden = !words.every((w) => it.text.includes(w))
    for (const g of list.children) g.hidden = g._items.every((it) => it.item.hidden)
  })
  search.addEventListener('keydown', (e) => {
    // Enter adds the first match.
    if (e.key === 'Enter') {
      const first = items.find((it) => !it.item.hidden)
      if (first) canvas.addNode(first.item.dataset.kind)
    }
  })
}
