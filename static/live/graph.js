// The deployed design's graph, read-only: the design's nodes where the
// editor placed them, with live badges (records/s in and out averaged over
// the monitor's rate window, 20 s by default, consumer lag of sources,
// late drops of windowed aggregations) and edges as wide as the averaged
// rate of the node they leave, labelled with it. The rates are averaged
// because a windowed aggregation emitting on window close sends bursts:
// its per-second rate reads 0 between closes while its output flows.
//
// Each node's element has data-testid live-node-<id> and carries
// data-in, data-out (the averaged rates), data-lag and data-late-drops as
// they were last shown.

import { rate, count, subtopologyOf, laggingTasks } from './format.js'
import { fitAll, MIN_ZOOM } from '../editor/fit.js'

// WIDTH fits a rates label such as "in 10.0k/s  out 10.0k/s  avg 20s".
const WIDTH = 250
const HEIGHT = 78
// The graph is as wide as its panel and as tall as the design at the zoom
// that fits it (every node shows), from HEIGHT_PX to MAX_HEIGHT_PX.
const HEIGHT_PX = 220
const MAX_HEIGHT_PX = 560
const PADDING = 24
// EDGE_GAP is the least room between a node and the next one right of it
// (the editor's nodes are narrower and closer), for an edge's rate label;
// ROW_GAP the least between rows.
const EDGE_GAP = 110
const ROW_GAP = 28

const GROUP_COLOURS = {
  sources: '#2f9e44',
  stateless: '#1c7ed6',
  'grouping and aggregation': '#ae3ec9',
  windows: '#f08c00',
  joins: '#0c8599',
  sinks: '#e03131',
}

const SOURCE_KINDS = new Set(['source-stream', 'source-table'])
const AGGREGATIONS = new Set(['count', 'reduce', 'aggregate'])

let registered = false

function register(X6) {
  if (registered) return
  registered = true
  const text = (y, size, extra = {}) => ({ refX: 14, refY: y, fontSize: size, textAnchor: 'start', textVerticalAnchor: 'middle', ...extra })
  X6.Graph.registerNode(
    'braid-live-node',
    {
      width: WIDTH,
      height: HEIGHT,
      markup: [
        { tagName: 'rect', selector: 'body' },
        { tagName: 'rect', selector: 'stripe' },
        { tagName: 'text', selector: 'title' },
        { tagName: 'text', selector: 'label' },
        { tagName: 'text', selector: 'rates' },
        { tagName: 'text', selector: 'extra' },
      ],
      attrs: {
        body: { refWidth: '100%', refHeight: '100%', rx: 6, ry: 6, fill: '#fff', stroke: '#868e96', strokeWidth: 1.5 },
        stripe: { width: 6, refHeight: '100%', rx: 3, ry: 3, fill: '#1c7ed6' },
        title: text(13, 10, { fill: '#868e96' }),
        label: text(30, 13, { fill: '#212529', fontWeight: 600 }),
        rates: text(49, 11, { fill: '#1864ab', fontFamily: 'ui-monospace, Menlo, monospace' }),
        extra: text(65, 10, { fill: '#c92a2a', fontFamily: 'ui-monospace, Menlo, monospace' }),
      },
    },
    true,
  )
}

export class LiveGraph {
  // container: the element to draw in; catalog: /api/catalog's answer
  // (for kinds' titles and groups), or null.
  constructor(container, catalog) {
    const X6 = window.X6
    if (!X6) throw new Error('the graph library (X6) is not loaded')
    register(X6)
    this.kinds = new Map(((catalog && catalog.kinds) || []).map((k) => [k.name, k]))
    // The graph has the container's width and a fixed height; it follows
    // the container's width itself (X6's autoResize would let the graph
    // and a grid row of the page grow each other).
    const size = () => {
      const parent = container.parentElement
      let width = container.clientWidth
      if (parent) {
        const cs = getComputedStyle(parent)
        width = parent.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)
      }
      return { width: Math.max(200, Math.floor(width)), height: this.height }
    }
    this.container = container
    this.height = HEIGHT_PX
    this.size = size
    this.graph = new X6.Graph({
      container,
      ...size(),
      async: false,
      interacting: false,
      background: { color: '#f8f9fa' },
      grid: { visible: true, size: 10, type: 'dot', args: { color: '#dee2e6' } },
      panning: { enabled: true },
      mousewheel: { enabled: true, modifiers: ['ctrl', 'meta'], minScale: MIN_ZOOM, maxScale: 2 },
    })
    this.graph.on('view:mounted', ({ view }) => {
      if (view.cell.isNode()) {
        view.container.setAttribute('data-testid', `live-node-${view.cell.id}`)
        view.container.setAttribute('data-node-id', view.cell.id)
      }
    })
    if (window.ResizeObserver) {
      let last = ''
      new ResizeObserver(() => {
        const { width, height } = size()
        if (`${width}x${height}` === last) return
        last = `${width}x${height}`
        this.graph.resize(width, height)
        this.fit()
      }).observe(container.parentElement || container)
    }
    this.design = { nodes: [], edges: [] }
    this.subtopologies = {}
    this.operators = {}
  }

  // load draws a design ({nodes, edges}); compiled is /api/compile's
  // answer (nodes' sub-topologies), operators maps node ids to processor
  // names.
  load(design, compiled, operators) {
    this.design = design
    this.operators = operators || {}
    this.subtopologies = {}
    for (const [id, n] of Object.entries((compiled && compiled.nodes) || {})) this.subtopologies[id] = n.subtopologies || []
    this.windowed = new Set()
    for (const e of design.edges || []) {
      const from = design.nodes.find((n) => n.id === e.from)
      if (from && from.kind === 'windowed-by') this.windowed.add(e.to)
    }
    const g = this.graph
    g.clearCells()
    const at = spread(design.nodes || [], design.edges || [])
    g.addNodes(
      (design.nodes || []).map((n) => {
        const kind = this.kinds.get(n.kind)
        const params = n.params || {}
        const name = n.name || (typeof params.name === 'string' && params.name) || n.id
        return {
          id: n.id,
          shape: 'braid-live-node',
          x: at.get(n.id).x,
          y: at.get(n.id).y,
          data: { kind: n.kind },
          attrs: {
            title: { text: kind ? kind.title : n.kind },
            label: { text: truncate(name, 22) },
            rates: { text: '' },
            extra: { text: '' },
            stripe: { fill: (kind && GROUP_COLOURS[kind.group]) || '#868e96' },
          },
        }
      }),
    )
    const ids = new Set(design.nodes.map((n) => n.id))
    g.addEdges(
      (design.edges || [])
        .filter((e) => ids.has(e.from) && ids.has(e.to))
        .map((e) => ({
          source: { cell: e.from, anchor: { name: 'right' }, connectionPoint: 'anchor' },
          target: { cell: e.to, anchor: { name: 'left' }, connectionPoint: 'anchor' },
          connector: { name: 'smooth' },
          data: { from: e.from, to: e.to },
          attrs: { line: { stroke: '#adb5bd', strokeWidth: 1.5, targetMarker: { name: 'block', width: 8, height: 6 } } },
        })),
    )
    requestAnimationFrame(() => this.fit())
  }

  // fit scales the design to the panel: the zoom that fits its width in
  // the panel's and its height in MAX_HEIGHT_PX (at most 1), the graph as
  // tall as the design at that zoom (from HEIGHT_PX), and the design
  // fitted there, every node inside (fit.js). The container's data-zoom
  // is the zoom.
  fit() {
    const g = this.graph
    if (!g.getNodes().length) return
    const area = g.getContentArea()
    const { width } = this.size()
    const fits = Math.min((width - 2 * PADDING) / Math.max(1, area.width), (MAX_HEIGHT_PX - 2 * PADDING) / Math.max(1, area.height))
    const s = Math.max(MIN_ZOOM, Math.min(1, fits))
    const height = Math.round(Math.min(MAX_HEIGHT_PX, Math.max(HEIGHT_PX, area.height * s + 2 * PADDING)))
    if (height !== this.height) {
      this.height = height
      this.container.style.height = `${height}px`
      g.resize(width, height)
    }
    fitAll(g, this.container, PADDING, 1)
  }

  // stats of a node: its operator's {in, out, inAvgPerSec, outAvgPerSec,
  // lateDrops}, or null.
  stats(dep, id) {
    const op = this.operators[id]
    return (op && dep && dep.nodes && dep.nodes[op]) || null
  }

  // outRate is the averaged rate a node sends on: its operator's, or for
  // a node without one (group-by-key, windowed-by), what enters it.
  outRate(dep, id, seen = new Set()) {
    const s = this.stats(dep, id)
    if (s) return s.outAvgPerSec || 0
    if (seen.has(id)) return 0
    seen.add(id)
    let sum = 0
    for (const e of this.design.edges) if (e.to === id) sum += this.outRate(dep, e.from, seen)
    return sum
  }

  // sourceLag sums the lag of the active tasks of a source's
  // sub-topologies, and of the failed ones no one took over.
  sourceLag(dep, id) {
    const subs = new Set(this.subtopologies[id] || [])
    let lag = 0
    for (const [, t] of laggingTasks(dep)) if (subs.has(subtopologyOf(t.id)) && t.lag > 0) lag += t.lag
    return lag
  }

  // update shows a snapshot's deployment on the nodes and edges.
  update(dep) {
    if (!dep) return
    let max = 1
    const rates = new Map()
    for (const n of this.design.nodes) {
      const r = this.outRate(dep, n.id)
      rates.set(n.id, r)
      max = Math.max(max, r)
    }
    for (const n of this.design.nodes) {
      const node = this.graph.getCellById(n.id)
      if (!node) continue
      const s = this.stats(dep, n.id)
      const view = this.graph.findViewByCell(node)
      const el = view && view.container
      const span = dep.rateWindowMs ? `  avg ${Math.round(dep.rateWindowMs / 1000)}s` : ''
      const rateText = (s ? `in ${rate(s.inAvgPerSec || 0)}/s  out ${rate(s.outAvgPerSec || 0)}/s` : `${rate(rates.get(n.id))}/s`) + span
      const extras = []
      if (SOURCE_KINDS.has(n.kind)) {
        const lag = this.sourceLag(dep, n.id)
        extras.push(`lag ${count(lag)}`)
        if (el) el.dataset.lag = String(lag)
      }
      if (s && (s.lateDrops > 0 || (AGGREGATIONS.has(n.kind) && this.windowed.has(n.id)))) {
        extras.push(`late drops ${count(s.lateDrops || 0)}`)
        if (el) el.dataset.lateDrops = String(s.lateDrops || 0)
      }
      node.setAttrs({ rates: { text: rateText }, extra: { text: extras.join('  ') } }, { silent: false })
      if (el && s) {
        el.dataset.in = String(s.inAvgPerSec || 0)
        el.dataset.out = String(s.outAvgPerSec || 0)
      }
    }
    for (const e of this.graph.getEdges()) {
      const d = e.getData() || {}
      const r = rates.get(d.from) || 0
      const w = 1.5 + 6 * Math.sqrt(r / max)
      e.attr('line/strokeWidth', Math.round(w * 10) / 10)
      e.attr('line/stroke', r > 0 ? '#4c6ef5' : '#adb5bd')
      e.setLabels([{ attrs: { label: { text: `${rate(r)}/s`, fontSize: 10, fill: '#364fc7' } }, position: { distance: 0.5, offset: -10 } }])
    }
  }
}

// spread places the nodes as the editor did, stretched so that an edge
// leaving a node rightwards has EDGE_GAP for its label and rows do not
// touch: the live nodes are bigger than the editor's.
function spread(nodes, edges) {
  const pos = new Map(nodes.map((n) => [n.id, { x: (n.position && n.position.x) || 0, y: (n.position && n.position.y) || 0 }]))
  let minDx = Infinity
  for (const e of edges) {
    const a = pos.get(e.from)
    const b = pos.get(e.to)
    if (a && b && b.x > a.x) minDx = Math.min(minDx, b.x - a.x)
  }
  const sx = Number.isFinite(minDx) ? Math.max(1, (WIDTH + EDGE_GAP) / minDx) : 1
  const list = [...pos.values()]
  let minDy = Infinity
  for (let i = 0; i < list.length; i++) {
    for (let j = i + 1; j < list.length; j++) {
      const dy = Math.abs(list[i].y - list[j].y)
      if (dy > 0 && Math.abs(list[i].x - list[j].x) * sx < WIDTH) minDy = Math.min(minDy, dy)
    }
  }
  const sy = Number.isFinite(minDy) ? Math.max(1, (HEIGHT + ROW_GAP) / minDy) : 1
  const out = new Map()
  for (const [id, p] of pos) out.set(id, { x: Math.round(p.x * sx), y: Math.round(p.y * sy) })
  return out
}

function truncate(s, n) {
  s = String(s).replace(/\s+/g, ' ')
  return s.length > n ? s.slice(0, n - 1) + '…' : s
}
