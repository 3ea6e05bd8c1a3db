// The canvas: an X6 graph holding the design's nodes and edges, with
// ports from the catalog, connection rules (data types, duplicates,
// cycles), selection, snaplines, undo history, a minimap, keyboard
// shortcuts, copy/paste and dagre auto-layout.
//
// Each X6 node's id is the design node's id and its data is
// {kind, name, params}; ports are "in:<name>" and "out:<name>". Every
// change the editor makes goes through a batch, so that one user action
// is one undo step.

import { fitAll, MIN_ZOOM } from './fit.js'
import { Catalog, DesignIndex, branchesOf, newNodeId, initialParams } from './catalog.js'

export const NODE_WIDTH = 190
const MIN_HEIGHT = 64
const PORT_GAP = 22
// NODE_GAP is the room a new node keeps from the others (the demo's
// nodes are this far apart).
const NODE_GAP = 30

// Colours of the left stripe, by palette group.
const GROUP_COLOURS = {
  sources: '#2f9e44',
  stateless: '#1c7ed6',
  'grouping and aggregation': '#ae3ec9',
  windows: '#f08c00',
  joins: '#0c8599',
  sinks: '#e03131',
}

let registered = false

function registerShapes() {
  const X6 = window.X6
  if (registered) return
  registered = true
  const portAttrs = (magnet) => ({
    circle: {
      r: 6,
      magnet,
      stroke: '#5c7cfa',
      strokeWidth: 2,
      fill: '#fff',
    },
    text: { fontSize: 10, fill: '#495057' },
  })
  X6.Graph.registerNode(
    'braid-node',
    {
      width: NODE_WIDTH,
      height: MIN_HEIGHT,
      markup: [
        { tagName: 'rect', selector: 'body', className: 'be-body' },
        { tagName: 'rect', selector: 'stripe', className: 'be-stripe' },
        { tagName: 'text', selector: 'title', className: 'be-title' },
        { tagName: 'text', selector: 'label', className: 'be-label' },
        { tagName: 'text', selector: 'detail', className: 'be-detail' },
        { tagName: 'circle', selector: 'marker', className: 'be-marker' },
      ],
      attrs: {
        body: { refWidth: '100%', refHeight: '100%', rx: 6, ry: 6, fill: '#ffffff', stroke: '#868e96', strokeWidth: 1.5 },
        stripe: { width: 6, refHeight: '100%', rx: 3, ry: 3, fill: '#1c7ed6' },
        title: { refX: 14, refY: 15, fontSize: 10, fill: '#868e96', textAnchor: 'start', textVerticalAnchor: 'middle' },
        label: {
          refX: 14,
          refY: 33,
          fontSize: 13,
          fontWeight: 600,
          fill: '#212529',
          textAnchor: 'start',
          textVerticalAnchor: 'middle',
        },
        detail: {
          refX: 14,
          refY: 50,
          fontSize: 10,
          fill: '#495057',
          textAnchor: 'start',
          textVerticalAnchor: 'middle',
          fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace',
        },
        marker: { refX: '100%', refX2: -12, refY: 12, r: 5, fill: '#e03131', display: 'none' },
      },
      // A port's label sits outside the node, above the edge that meets
      // the port: inside, it ran over the node's text ("rignter 5s").
      ports: {
        groups: {
          in: { position: 'left', attrs: portAttrs('passive'), label: { position: { name: 'left', args: { x: -8, y: -9 } } } },
          out: { position: 'right', attrs: portAttrs(true), label: { position: { name: 'right', args: { x: 8, y: -9 } } } },
        },
      },
    },
    true,
  )
  X6.Graph.registerEdge(
    'braid-edge',
    {
      inherit: 'edge',
      attrs: {
        line: {
          stroke: '#868e96',
          strokeWidth: 1.6,
          targetMarker: { name: 'block', width: 9, height: 7 },
        },
      },
      zIndex: 0,
    },
    true,
  )
}

export function portId(dir, name) {
  return `${dir}:${name}`
}

export function splitPortId(id) {
  const i = (id || '').indexOf(':')
  return i < 0 ? ['', id || ''] : [id.slice(0, i), id.slice(i + 1)]
}

// detailOf is the one-line summary under a node's name.
function detailOf(kind, params) {
  const p = params || {}
  const s = (v) => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v))
  switch (kind.name) {
    case 'source-stream':
    case 'source-table':
    case 'sink':
      return p.topic ? `topic: ${p.topic}` : ''
    case 'windowed-by': {
      const type = p.type || 'tumbling'
      const len = p.size || p.gap || ''
      const parts = [type, len, p.advance ? `advance ${p.advance}` : '', p.grace ? `grace ${p.grace}` : '', p.emit === 'on-window-close' ? 'final' : '']
      return parts.filter(Boolean).join(' ')
    }
    case 'branch':
      return branchesOf({ params: p }).length + ' branches'
    case 'count':
    case 'reduce':
    case 'aggregate':
      return p.store ? `store: ${p.store}` : s(p.reducer || p.aggregator || '')
    case 'repartition':
    case 'group-by-key':
      return p.name ? `topic: ${p.name}` : ''
    case 'stream-join': {
      // The type and window say more than the joiner, which defaults.
      const win = p.before || p.after ? `-${p.before || p.window || '?'} +${p.after || p.window || '?'}` : p.window || ''
      return [p.type || 'inner', win, p.grace ? `grace ${p.grace}` : ''].filter(Boolean).join(' ')
    }
    case 'stream-table-join':
    case 'table-join':
      return [p.type || 'inner', p.store ? `store: ${p.store}` : ''].filter(Boolean).join(' ')
    default:
      for (const param of kind.params) {
        if (param.type === 'expression' && p[param.name]) return s(p[param.name])
      }
      return ''
  }
}

export class Canvas {
  // opts: container, minimap (element or null), catalog (Catalog),
  // onChange(), onSelect(cells), onNodeClick(id), status(msg, kind).
  constructor(opts) {
    const X6 = window.X6
    registerShapes()
    this.catalog = opts.catalog
    this.opts = opts
    this.pasteCount = 0
    this.clipboard = null
    this.problemNodes = new Set()
    const self = this
    const graph = new X6.Graph({
      container: opts.container,
      autoResize: true,
      async: false,
      grid: { visible: true, size: 10, type: 'dot', args: { color: '#ced4da' } },
      background: { color: '#f8f9fa' },
      panning: { enabled: true, eventTypes: ['rightMouseDown', 'mouseWheel'] },
      mousewheel: { enabled: true, modifiers: ['ctrl', 'meta'], minScale: MIN_ZOOM, maxScale: 2.5, zoomAtMousePosition: true },
      scaling: { min: MIN_ZOOM, max: 2.5 },
      preventDefaultContextMenu: true,
      interacting: {
        edgeMovable: false,
        edgeLabelMovable: false,
        arrowheadMovable: false,
        vertexAddable: false,
        vertexMovable: false,
        vertexDeletable: false,
      },
      connecting: {
        snap: { radius: 24 },
        allowBlank: false,
        allowLoop: false,
        allowNode: false,
        allowEdge: false,
        allowPort: true,
        allowMulti: true,
        highlight: true,
        anchor: 'center',
        connectionPoint: 'anchor',
        router: 'normal',
        connector: { name: 'smooth' },
        createEdge() {
          return this.createEdge({ shape: 'braid-edge' })
        },
        validateMagnet({ magnet }) {
          return magnet.getAttribute('port-group') === 'out'
        },
        validateConnection(args) {
          return self.whyNotConnect(args) === ''
        },
      },
      highlighting: {
        magnetAvailable: { name: 'className', args: { className: 'be-available' } },
        magnetAdsorbed: { name: 'className', args: { className: 'be-adsorbed' } },
      },
    })
    this.graph = graph

    this.history = new X6.History({
      enabled: true,
      stackSize: 500,
      beforeAddCommand(event, args) {
        return !(args && args.options && args.options.ignoreHistory)
      },
    })
    graph.use(this.history)
    this.selection = new X6.Selection({
      enabled: true,
      multiple: true,
      rubberband: true,
      rubberEdge: true,
      movable: true,
      showNodeSelectionBox: true,
      pointerEvents: 'none',
      multipleSelectionModifiers: ['shift', 'ctrl', 'meta'],
    })
    graph.use(this.selection)
    graph.use(new X6.Snapline({ enabled: true, sharp: true }))
    this.keyboard = new X6.Keyboard({ enabled: true, global: true })
    graph.use(this.keyboard)
    if (opts.minimap) {
      graph.use(
        new X6.MiniMap({
          container: opts.minimap,
          width: Math.max(120, opts.minimap.clientWidth || 200),
          height: Math.max(90, opts.minimap.clientHeight || 140),
          padding: 8,
          scalable: false,
        }),
      )
    }
    this.dnd = new X6.Dnd({
      target: graph,
      scaled: false,
      getDropNode: (dragging) => {
        const d = dragging.getData()
        return graph.createNode(this.nodeSpec({ id: this.freshId(d.kind), kind: d.kind, params: d.params, position: dragging.getPosition() }))
      },
    })

    this.bindEvents()
    this.bindKeys()
    this.keepCentre(opts.container)
  }

  // keepCentre keeps the point in the middle of the canvas there when
  // the canvas changes size (a panel opens below it).
  keepCentre(container) {
    if (!window.ResizeObserver) return
    let last = { w: container.clientWidth, h: container.clientHeight }
    new ResizeObserver(() => {
      const w = container.clientWidth
      const h = container.clientHeight
      if (!w || !h || (w === last.w && h === last.h)) return
      const { tx, ty } = this.graph.translate()
      if (last.w && last.h) this.graph.translate(tx + (w - last.w) / 2, ty + (h - last.h) / 2)
      last = { w, h }
    }).observe(container)
  }

  bindEvents() {
    const g = this.graph
    g.on('scale', ({ sx }) => (this.opts.container.dataset.zoom = String(Math.round(sx * 1000) / 1000)))
    g.on('view:mounted', ({ view }) => this.decorate(view))
    g.on('edge:connected', ({ edge }) => this.decorateCell(edge))
    g.on('edge:change:target', ({ edge }) => this.decorateCell(edge))
    g.on('edge:change:source', ({ edge }) => this.decorateCell(edge))
    g.on('node:change:ports', ({ node }) => queueMicrotask(() => this.decorateCell(node)))
    g.on('cell:added', ({ cell }) => queueMicrotask(() => this.decorateCell(cell)))
    const changed = () => this.opts.onChange && this.opts.onChange()
    g.on('cell:added', changed)
    g.on('cell:removed', changed)
    g.on('cell:changed', changed)
    g.on('selection:changed', () => this.opts.onSelect && this.opts.onSelect(this.selected()))
    g.on('node:click', ({ node }) => this.opts.onNodeClick && this.opts.onNodeClick(node.id))
    g.on('history:change', () => this.opts.onHistory && this.opts.onHistory())
    // Say why an edge dropped on an input port was refused.
    g.on('edge:added', ({ edge }) => {
      if (!edge.getTargetCellId()) this.dragSource = { ...edge.getSource() }
    })
    g.on('edge:mouseup', ({ edge, e }) => {
      const source = this.dragSource
      this.dragSource = null
      if (edge.getTargetCell() || !source || !source.cell) return
      const el = document.elementFromPoint(e.clientX, e.clientY)
      const port = el && el.closest && el.closest('[port-group="in"]')
      const cellEl = port && port.closest('[data-cell-id]')
      if (!port || !cellEl) return
      const why = this.whyNotConnect({
        sourceCell: g.getCellById(source.cell),
        sourcePort: source.port,
        targetCell: g.getCellById(cellEl.getAttribute('data-cell-id')),
        targetPort: port.getAttribute('port'),
        edge,
      })
      if (why) this.opts.status && this.opts.status('Not connected: ' + why, 'error')
    })
  }

  bindKeys() {
    const k = this.keyboard
    const hasCells = () => this.selection.getSelectedCells().length > 0
    k.bindKey(['ctrl+z', 'meta+z'], () => {
      this.undo()
      return false
    })
    k.bindKey(['ctrl+shift+z', 'meta+shift+z', 'ctrl+y'], () => {
      this.redo()
      return false
    })
    k.bindKey(['ctrl+c', 'meta+c'], () => {
      if (!hasCells() || !textSelectionEmpty()) return undefined
      this.copy()
      return false
    })
    k.bindKey(['ctrl+x', 'meta+x'], () => {
      if (!hasCells() || !textSelectionEmpty()) return undefined
      this.copy()
      this.removeSelected()
      return false
    })
    k.bindKey(['ctrl+v', 'meta+v'], () => {
      if (!this.clipboardContent()) return undefined
      this.paste()
      return false
    })
    k.bindKey(['delete', 'backspace'], () => {
      if (!hasCells()) return undefined
      this.removeSelected()
      return false
    })
    k.bindKey(['ctrl+a', 'meta+a'], () => {
      this.selection.select(this.graph.getCells())
      return false
    })
    k.bindKey(['escape'], () => {
      this.selection.clean()
    })
  }

  // decorate puts test ids, problem markers and classes on a view's
  // element (the DOM only: none of it is part of the design).
  decorate(view) {
    if (!view || !view.cell) return
    const cell = view.cell
    const el = view.container
    if (cell.isNode()) {
      el.setAttribute('data-testid', `node-${cell.id}`)
      el.setAttribute('data-node-id', cell.id)
      const bad = this.problemNodes.has(cell.id)
      el.classList.toggle('has-problem', bad)
      el.setAttribute('data-problem', bad ? 'true' : 'false')
      this.drawBadge(cell, el)
      for (const port of el.querySelectorAll('[port]')) {
        const [dir, name] = splitPortId(port.getAttribute('port'))
        port.setAttribute('data-testid', `port-${cell.id}-${dir}-${name}`)
      }
    } else if (cell.isEdge()) {
      const s = cell.getSource()
      const t = cell.getTarget()
      if (s.cell && t.cell) {
        el.setAttribute('data-testid', `edge-${s.cell}-${splitPortId(s.port)[1]}-${t.cell}-${splitPortId(t.port)[1]}`)
      }
    }
  }

  // drawBadge shows the number of records the node emitted in the last
  // preview at its top right corner (DOM only).
  drawBadge(cell, el) {
    const old = el.querySelector(':scope > .be-badge')
    if (old) old.remove()
    // No preview result (null badges) or no count for this node: no badge.
    const n = this.badges ? this.badges.get(cell.id) : undefined
    if (n === undefined || n === null) return
    const NS = 'http://www.w3.org/2000/svg'
    const text = String(n)
    const w = 10 + 7 * text.length
    const g = document.createElementNS(NS, 'g')
    g.setAttribute('class', 'be-badge')
    g.setAttribute('data-testid', `badge-${cell.id}`)
    g.setAttribute('transform', `translate(${cell.getSize().width - w + 6}, -9)`)
    const r = document.createElementNS(NS, 'rect')
    r.setAttribute('width', w)
    r.setAttribute('height', 16)
    r.setAttribute('rx', 8)
    const t = document.createElementNS(NS, 'text')
    t.setAttribute('x', w / 2)
    t.setAttribute('y', 12)
    t.setAttribute('text-anchor', 'middle')
    t.textContent = text
    const title = document.createElementNS(NS, 'title')
    title.textContent = `${text} record(s) in the last preview`
    g.append(title, r, t)
    el.append(g)
  }

  // setBadges shows record counts by node id (null clears them).
  setBadges(counts) {
    this.badges = counts ? new Map(Object.entries(counts)) : null
    for (const n of this.graph.getNodes()) this.decorateCell(n)
  }

  decorateCell(cell) {
    const view = this.graph.findViewByCell(cell)
    if (view) this.decorate(view)
  }

  // setProblemNodes marks the nodes that have problems.
  setProblemNodes(ids) {
    this.problemNodes = new Set(ids)
    for (const n of this.graph.getNodes()) this.decorateCell(n)
  }

  kindOf(name) {
    return this.catalog.kind(name)
  }

  freshId(kind) {
    const taken = new Set(this.graph.getNodes().map((n) => n.id))
    return newNodeId(kind, taken)
  }

  // portItems are the X6 port items of a node.
  portItems(node) {
    const items = []
    const ins = this.catalog.inputPorts(node)
    const outs = this.catalog.outputPorts(node)
    for (const p of ins) {
      items.push({
        id: portId('in', p.name),
        group: 'in',
        attrs: {
          circle: { title: `${p.name}: ${p.types.join(' | ')}` },
          text: { text: ins.length > 1 ? p.name : '' },
        },
      })
    }
    for (const p of outs) {
      items.push({
        id: portId('out', p.name),
        group: 'out',
        attrs: {
          circle: { title: p.name },
          text: { text: outs.length > 1 || p.name !== 'out' ? p.name : '' },
        },
      })
    }
    return items
  }

  heightFor(node) {
    const n = Math.max(this.catalog.inputPorts(node).length, this.catalog.outputPorts(node).length)
    return Math.max(MIN_HEIGHT, 16 + n * PORT_GAP)
  }

  labelAttrs(node) {
    const kind = this.kindOf(node.kind)
    const params = node.params || {}
    const name = node.name || (typeof params.name === 'string' && params.name) || node.id
    return {
      title: { text: kind ? kind.title : `unknown kind ${node.kind}` },
      label: { text: truncate(name, 21) },
      detail: { text: truncate(kind ? detailOf(kind, params) : '', 27) },
      stripe: { fill: (kind && GROUP_COLOURS[kind.group]) || '#868e96' },
    }
  }

  // nodeSpec turns a design node into X6 node metadata.
  nodeSpec(node) {
    const data = { kind: node.kind, name: node.name || '', params: clone(node.params || {}) }
    const full = { ...node, params: data.params }
    const pos = node.position || { x: 0, y: 0 }
    return {
      id: node.id,
      shape: 'braid-node',
      x: pos.x || 0,
      y: pos.y || 0,
      width: NODE_WIDTH,
      height: this.heightFor(full),
      data,
      attrs: this.labelAttrs(full),
      ports: { items: this.portItems(full) },
    }
  }

  edgeSpec(e) {
    return {
      shape: 'braid-edge',
      source: { cell: e.from, port: portId('out', e.fromPort) },
      target: { cell: e.to, port: portId('in', e.toPort) },
    }
  }

  // designNode reads a design node back from an X6 node.
  designNode(n) {
    const d = n.getData() || {}
    const p = n.getPosition()
    const out = { id: n.id, kind: d.kind, position: { x: Math.round(p.x), y: Math.round(p.y) } }
    if (d.name) out.name = d.name
    const params = cleanParams(d.params)
    if (Object.keys(params).length > 0) out.params = params
    return out
  }

  // toDesign returns the nodes and edges on the canvas (edges whose both
  // ends are on ports; except leaves one edge out, by id).
  toDesign(except) {
    const nodes = this.graph.getNodes().map((n) => this.designNode(n))
    const edges = []
    for (const e of this.graph.getEdges()) {
      if (except && e.id === except) continue
      const s = e.getSource()
      const t = e.getTarget()
      if (!s.cell || !t.cell || !s.port || !t.port) continue
      edges.push({ from: s.cell, fromPort: splitPortId(s.port)[1], to: t.cell, toPort: splitPortId(t.port)[1] })
    }
    return { nodes, edges }
  }

  // whyNotConnect says why an edge may not join two ports ('' if it may).
  whyNotConnect({ sourceCell, targetCell, sourcePort, targetPort, edge }) {
    if (!sourceCell || !targetCell || !sourcePort || !targetPort) return 'drop the edge on an input port'
    const [sdir, sname] = splitPortId(sourcePort)
    const [tdir, tname] = splitPortId(targetPort)
    if (sdir !== 'out' || tdir !== 'in') return 'edges go from an output (right) to an input (left)'
    const idx = new DesignIndex(this.catalog, this.toDesign(edge && edge.id))
    return idx.whyNotConnect(sourceCell.id, sname, targetCell.id, tname)
  }

  // load replaces the canvas with a design. With undoable it is one undo
  // step; otherwise the history starts afresh.
  load(design, { undoable = false } = {}) {
    const g = this.graph
    this.selection.clean()
    if (undoable) {
      g.startBatch('load')
      try {
        this.replace(design)
      } finally {
        g.stopBatch('load')
      }
    } else {
      // One reset of the model, rendered in one go, rather than a cell
      // added (and the graph redrawn) at a time.
      this.history.disable()
      const nodes = (design.nodes || []).map((n) => g.createNode(this.nodeSpec(n)))
      const edges = this.validEdges(design).map((e) => g.createEdge(this.edgeSpec(e)))
      g.resetCells([...nodes, ...edges])
      this.history.enable()
      this.history.clean()
    }
    for (const c of g.getCells()) this.decorateCell(c)
  }

  validEdges(design) {
    const ids = new Set((design.nodes || []).map((n) => n.id))
    return (design.edges || []).filter((e) => ids.has(e.from) && ids.has(e.to))
  }

  // replace turns the canvas into the design in place: nodes that stay
  // (by id) are updated rather than removed and added again, which the
  // undo history could not take back within one batch.
  replace(design) {
    const g = this.graph
    g.removeCells(g.getEdges())
    const want = new Map((design.nodes || []).map((n) => [n.id, n]))
    for (const n of g.getNodes()) if (!want.has(n.id)) n.remove()
    for (const node of design.nodes || []) {
      const spec = this.nodeSpec(node)
      const n = this.node(node.id)
      if (!n) {
        g.addNode(spec)
        continue
      }
      n.setData(spec.data, { overwrite: true })
      n.setPropByPath('ports/items', spec.ports.items, { rewrite: true })
      n.setAttrs(spec.attrs)
      n.resize(spec.width, spec.height)
      n.position(spec.x, spec.y)
    }
    g.addEdges(this.validEdges(design).map((e) => this.edgeSpec(e)))
  }

  // needsLayout says whether nodes overlap (a design without positions).
  needsLayout() {
    const seen = new Set()
    for (const n of this.graph.getNodes()) {
      const p = n.getPosition()
      const k = Math.round(p.x) + ',' + Math.round(p.y)
      if (seen.has(k)) return true
      seen.add(k)
    }
    return false
  }

  // addNode adds a node of the kind (at a point of the graph, or at a
  // free place in view: freePlace) and selects it.
  addNode(kindName, at) {
    const kind = this.kindOf(kindName)
    if (!kind) return null
    const spec = this.nodeSpec({ id: this.freshId(kind.name), kind: kind.name, params: initialParams(kind), position: at || { x: 0, y: 0 } })
    let outOfView = false
    if (!at) {
      const place = this.freePlace(spec.width, spec.height)
      spec.x = place.x
      spec.y = place.y
      outOfView = place.outOfView
    }
    const node = this.graph.addNode(spec)
    this.lastAdded = node.id
    if (outOfView) this.graph.centerCell(node)
    this.selection.reset([node])
    return node
  }

  // freePlace is where a new node of the size goes, in the graph's
  // coordinates: right of the node added last, else below it, else the
  // free place of the visible area nearest its middle. A place is free
  // when the node, NODE_GAP away from every other node, lies in the
  // visible area (less a margin, and the minimap over its corner). With
  // none free in view, it is right of the whole design (outOfView: the
  // canvas pans to it).
  freePlace(width, height) {
    const g = this.graph
    const view = g.getGraphArea()
    const margin = 10 / g.zoom()
    const boxes = g.getNodes().map((n) => n.getBBox())
    const mini = this.minimapBox()
    if (mini) {
      const a = g.graphToLocal(mini.left, mini.top)
      const b = g.graphToLocal(mini.right, mini.bottom)
      boxes.push({ x: a.x, y: a.y, width: b.x - a.x, height: b.y - a.y })
    }
    const free = (x, y) =>
      x >= view.x + margin &&
      y >= view.y + margin &&
      x + width <= view.x + view.width - margin &&
      y + height <= view.y + view.height - margin &&
      boxes.every((b) => x + width + NODE_GAP <= b.x || b.x + b.width + NODE_GAP <= x || y + height + NODE_GAP <= b.y || b.y + b.height + NODE_GAP <= y)
    const last = this.lastAdded && this.node(this.lastAdded)
    if (last) {
      const b = last.getBBox()
      for (const p of [{ x: b.x + b.width + NODE_GAP, y: b.y }, { x: b.x, y: b.y + b.height + NODE_GAP }]) {
        if (free(p.x, p.y)) return p
      }
    }
    // Places on the grid, some 10 px of the screen apart whatever the zoom.
    const step = 10 * Math.max(1, Math.round(1 / g.zoom()))
    const cx = view.x + view.width / 2 - width / 2
    const cy = view.y + view.height / 2 - height / 2
    const places = []
    for (let x = Math.ceil((view.x + margin) / step) * step; x + width <= view.x + view.width - margin; x += step) {
      for (let y = Math.ceil((view.y + margin) / step) * step; y + height <= view.y + view.height - margin; y += step) {
        places.push({ x, y, d: (x - cx) ** 2 + (y - cy) ** 2 })
      }
    }
    places.sort((a, b) => a.d - b.d)
    const found = places.find((p) => free(p.x, p.y))
    if (found) return { x: found.x, y: found.y }
    const content = g.getContentArea()
    return { x: content.x + content.width + NODE_GAP, y: content.y, outOfView: true }
  }

  // minimapBox is the minimap's box in the canvas's pixels (it lies over
  // the canvas's corner), or null when it is not shown.
  minimapBox() {
    const m = this.opts.minimap
    if (!m || !m.offsetParent) return null
    const r = m.getBoundingClientRect()
    const c = this.opts.container.getBoundingClientRect()
    if (!r.width || !r.height) return null
    return { left: r.left - c.left, top: r.top - c.top, right: r.right - c.left, bottom: r.bottom - c.top }
  }

  // startDrag starts dragging a new node of the kind from the palette.
  startDrag(kindName, e) {
    const kind = this.kindOf(kindName)
    if (!kind) return
    const spec = this.nodeSpec({ id: 'palette-drag', kind: kind.name, params: initialParams(kind), position: { x: 0, y: 0 } })
    delete spec.id
    this.dnd.start(this.graph.createNode(spec), e)
  }

  node(id) {
    const c = this.graph.getCellById(id)
    return c && c.isNode() ? c : null
  }

  nodeData(id) {
    const n = this.node(id)
    return n ? { id, ...clone(n.getData()) } : null
  }

  // updateNode sets a node's name and parameters (one undo step),
  // keeping its labels and, for a branch node, its output ports in step;
  // renames maps old branch names to new ones so that edges follow.
  updateNode(id, { name, params }, renames = {}) {
    const n = this.node(id)
    if (!n) return
    const g = this.graph
    const old = n.getData()
    const data = { kind: old.kind, name: name === undefined ? old.name : name, params: clone(params === undefined ? old.params : params) }
    const full = { id, ...data }
    g.startBatch('update-node')
    try {
      const kind = this.kindOf(data.kind)
      if (kind && kind.branchOutputs) this.syncBranchPorts(n, full, renames)
      n.setData(data, { overwrite: true })
      n.setAttrs(this.labelAttrs(full))
    } finally {
      g.stopBatch('update-node')
    }
  }

  // syncBranchPorts gives a branch node one output port per branch, in
  // order. Edges of renamed branches are re-made on the new port and
  // those of removed branches go; the order of the steps (edges off, the
  // ports, edges on) keeps undo from leaving an edge on a missing port.
  syncBranchPorts(n, full, renames) {
    const g = this.graph
    const want = this.portItems(full)
    const wantIds = new Set(want.map((p) => p.id))
    const remake = []
    for (const e of g.getConnectedEdges(n, { outgoing: true })) {
      const port = e.getSourcePortId()
      if (wantIds.has(port)) continue
      const [, name] = splitPortId(port)
      const to = renames[name]
      if (to !== undefined && wantIds.has(portId('out', to))) {
        remake.push({ source: { cell: n.id, port: portId('out', to) }, target: e.getTarget() })
      }
      e.remove()
    }
    const have = n.getPorts()
    if (JSON.stringify(have) !== JSON.stringify(want)) n.setPropByPath('ports/items', want, { rewrite: true })
    for (const r of remake) g.addEdge({ shape: 'braid-edge', ...r })
    const h = this.heightFor(full)
    if (n.getSize().height !== h) n.resize(NODE_WIDTH, h)
  }

  selected() {
    return this.selection.getSelectedCells()
  }

  selectNode(id, { center = true } = {}) {
    const n = this.node(id)
    if (!n) return
    this.selection.reset([n])
    if (center) this.graph.centerCell(n)
  }

  removeSelected() {
    const cells = this.selected()
    if (!cells.length) return
    this.graph.startBatch('remove')
    this.graph.removeCells(cells)
    this.graph.stopBatch('remove')
    this.selection.clean()
  }

  // copy puts the selected nodes, and the edges between them, on the
  // editor's clipboard (kept in sessionStorage, so that another design
  // of the same tab can paste them).
  copy() {
    const nodes = this.selected().filter((c) => c.isNode())
    if (!nodes.length) return
    const ids = new Set(nodes.map((n) => n.id))
    const design = this.toDesign()
    const content = {
      nodes: design.nodes.filter((n) => ids.has(n.id)),
      edges: design.edges.filter((e) => ids.has(e.from) && ids.has(e.to)),
    }
    this.clipboard = content
    this.pasteCount = 0
    try {
      sessionStorage.setItem('braid.clipboard', JSON.stringify(content))
    } catch {
      // storage may be unavailable
    }
    this.opts.status && this.opts.status(`Copied ${content.nodes.length} node(s)`)
  }

  clipboardContent() {
    if (this.clipboard) return this.clipboard
    try {
      const s = sessionStorage.getItem('braid.clipboard')
      return s ? JSON.parse(s) : null
    } catch {
      return null
    }
  }

  // paste adds the clipboard's nodes with fresh ids, offset a little
  // further on each paste, and selects them.
  paste() {
    const content = this.clipboardContent()
    if (!content || !content.nodes || !content.nodes.length) return
    this.pasteCount++
    const offset = 30 * this.pasteCount
    const taken = new Set(this.graph.getNodes().map((n) => n.id))
    const ids = {}
    const nodes = content.nodes.map((n) => {
      const id = newNodeId(n.kind, taken)
      taken.add(id)
      ids[n.id] = id
      return { ...clone(n), id, position: { x: (n.position?.x || 0) + offset, y: (n.position?.y || 0) + offset } }
    })
    const edges = content.edges.map((e) => ({ ...e, from: ids[e.from], to: ids[e.to] }))
    const g = this.graph
    g.startBatch('paste')
    const added = nodes.map((n) => g.addNode(this.nodeSpec(n)))
    g.addEdges(edges.map((e) => this.edgeSpec(e)))
    g.stopBatch('paste')
    this.selection.reset(added)
  }

  undo() {
    if (this.history.canUndo()) this.history.undo()
  }

  redo() {
    if (this.history.canRedo()) this.history.redo()
  }

  canUndo() {
    return this.history.canUndo()
  }

  canRedo() {
    return this.history.canRedo()
  }

  zoom(factor) {
    this.graph.zoom(factor)
  }

  // fit zooms to show every node of the design, with a margin (fit.js);
  // opening a design and Layout do it too. A node the minimap would cover
  // is fitted again beside the minimap or above it, whichever shows the
  // design bigger. The container's data-zoom is the zoom.
  fit() {
    const g = this.graph
    if (g.getNodes().length === 0) {
      g.zoomTo(1)
      return
    }
    const c = this.opts.container
    const pad = 40
    fitAll(g, c, pad, 1.2)
    const mini = this.minimapBox()
    if (!mini || !this.nodesUnder(mini)) return
    const beside = { top: pad, left: pad, bottom: pad, right: Math.max(pad, c.clientWidth - mini.left + 10) }
    const above = { top: pad, left: pad, right: pad, bottom: Math.max(pad, c.clientHeight - mini.top + 10) }
    fitAll(g, c, beside, 1.2)
    const zoomBeside = g.zoom()
    fitAll(g, c, above, 1.2)
    if (zoomBeside > g.zoom()) fitAll(g, c, beside, 1.2)
  }

  // nodesUnder says whether a node lies (partly) under a box in the
  // canvas's pixels.
  nodesUnder(box) {
    return this.graph.getNodes().some((n) => {
      const r = this.graph.localToGraph(n.getBBox())
      return r.x < box.right && box.left < r.x + r.width && r.y < box.bottom && box.top < r.y + r.height
    })
  }

  // layout places the nodes left to right with dagre (one undo step).
  layout() {
    const dagre = window.dagre
    if (!dagre) throw new Error('dagre is not loaded')
    const g = new dagre.graphlib.Graph({ multigraph: true })
    g.setGraph({ rankdir: 'LR', nodesep: 30, ranksep: 70, marginx: 20, marginy: 20 })
    g.setDefaultEdgeLabel(() => ({}))
    const nodes = this.graph.getNodes()
    for (const n of nodes) {
      const s = n.getSize()
      g.setNode(n.id, { width: s.width, height: s.height })
    }
    for (const e of this.graph.getEdges()) {
      const s = e.getSourceCellId()
      const t = e.getTargetCellId()
      if (s && t) g.setEdge(s, t, {}, e.id)
    }
    dagre.layout(g)
    this.graph.startBatch('layout')
    for (const n of nodes) {
      const p = g.node(n.id)
      if (p) n.position(Math.round(p.x - p.width / 2), Math.round(p.y - p.height / 2))
    }
    this.graph.stopBatch('layout')
  }

  // highlightNodes outlines the given nodes (compile view hover); none
  // clears.
  highlightNodes(ids) {
    const set = new Set(ids || [])
    for (const n of this.graph.getNodes()) {
      const v = this.graph.findViewByCell(n)
      if (v) v.container.classList.toggle('be-highlight', set.has(n.id))
    }
  }
}

// truncate shortens a label to n characters (SVG text does not wrap).
function truncate(s, n) {
  s = String(s).replace(/\s+/g, ' ')
  return s.length > n ? s.slice(0, n - 1) + '…' : s
}

function textSelectionEmpty() {
  const s = window.getSelection && window.getSelection()
  return !s || s.isCollapsed || String(s).length === 0
}

export function clone(v) {
  return v === undefined ? undefined : JSON.parse(JSON.stringify(v))
}

// cleanParams drops unset parameters (undefined, null, ''), and empty
// predicates of branches.
export function cleanParams(params) {
  const out = {}
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined || v === null || v === '') continue
    if (k === 'branches' && Array.isArray(v)) {
      out[k] = v.map((b) => {
        const c = { name: b.name }
        if (b.predicate) c.predicate = b.predicate
        return c
      })
      continue
    }
    out[k] = v
  }
  return out
}

export { Catalog }
