// The palette: the catalog's kinds grouped in palette order, with a
// search box. Dragging a kind onto the canvas adds a node (X6 Dnd);
// double-click or Enter adds one at a free place in view (Canvas.addNode:
// right of or below the one added last). Kinds the catalog marks
// importOnly (what an import makes of a processor it could not recognise)
// are not offered. Each group folds (its heading is a button), and while
// kinds are out of sight below the scrolled column a hint at its bottom
// names them and scrolls to them.
//
// Test ids: palette-search, group-<group> (data-collapsed), group-toggle-
// <group>, palette-<kind>, palette-more.

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
  const more = h('button', { type: 'button', class: 'be-palette-more', testid: 'palette-more', hidden: true })
  el.append(search, list, more)

  const items = []
  for (const [group, kinds] of catalog.groupedKinds()) {
    const offered = kinds.filter((k) => !k.importOnly)
    if (offered.length === 0) continue
    const slug = group.replace(/\s+/g, '-')
    const toggle = h('button', { type: 'button', class: 'be-palette-toggle', testid: `group-toggle-${slug}`, 'aria-expanded': 'true', text: group })
    const groupEl = h('section', { class: 'be-palette-group', testid: `group-${slug}`, dataset: { collapsed: 'false' } }, h('h3', {}, toggle))
    toggle.addEventListener('click', () => {
      const folded = groupEl.dataset.collapsed !== 'true'
      groupEl.dataset.collapsed = String(folded)
      toggle.setAttribute('aria-expanded', String(!folded))
      hint()
    })
    const groupItems = []
    for (const kind of offered) {
      const item = h(
        'div',
        {
          class: 'be-palette-item',
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
    hint()
  })
  search.addEventListener('keydown', (e) => {
    // Enter adds the first match.
    if (e.key === 'Enter') {
      const first = items.find((it) => !it.item.hidden)
      if (first) canvas.addNode(first.item.dataset.kind)
    }
  })

  // hint names the kinds below the scrolled column's visible part.
  const scroller = scrollParent(el)
  const below = () => {
    const bottom = scroller ? scroller.getBoundingClientRect().bottom : window.innerHeight
    const limit = bottom - (more.hidden ? 0 : more.offsetHeight)
    return items.filter((it) => !it.item.hidden && !it.groupEl.hidden && it.groupEl.dataset.collapsed !== 'true' && it.item.getBoundingClientRect().bottom > limit + 1)
  }
  function hint() {
    const hidden = below()
    more.hidden = hidden.length === 0
    if (hidden.length === 0) return
    const names = hidden.map((it) => it.item.querySelector('.be-palette-title').textContent)
    more.textContent = `↓ ${hidden.length} more: ${names.slice(0, 3).join(', ')}${names.length > 3 ? ', …' : ''}`
    more.title = names.join(', ')
  }
  more.addEventListener('click', () => {
    const hidden = below()
    if (!hidden.length || !scroller) return
    // The last hidden kind comes to the bottom, above the hint.
    const r = hidden[hidden.length - 1].item.getBoundingClientRect()
    scroller.scrollBy(0, r.bottom - (scroller.getBoundingClientRect().bottom - more.offsetHeight - 6))
    hint()
  })
  if (scroller) scroller.addEventListener('scroll', hint, { passive: true })
  window.addEventListener('resize', hint)
  if (window.ResizeObserver && scroller) new ResizeObserver(hint).observe(scroller)
  requestAnimationFrame(hint)
}

// scrollParent is the nearest ancestor that scrolls.
function scrollParent(el) {
  for (let p = el.parentElement; p; p = p.parentElement) {
    const o = getComputedStyle(p).overflowY
    if (o === 'auto' || o === 'scroll') return p
  }
  return null
}
