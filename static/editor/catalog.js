// The node-kind catalog as /api/catalog gives it, and what the editor
// derives from it: ports (a branch node has one output per branch), the
// data type leaving a port (same-as-input and grouped-input resolved from
// the node's input, as designer.Validate does), and whether an edge may
// join two ports. Pure functions over a design ({nodes, edges}); no DOM.

export const SAME_AS_INPUT = 'same-as-input'
export const GROUPED_INPUT = 'grouped-input'

export class Catalog {
  constructor(data) {
    this.kinds = (data && data.kinds) || []
    this.groups = (data && data.groups) || []
    this.serdes = (data && data.serdes) || []
    this.roles = (data && data.roles) || {}
    // limits: the most nodes and edges a design may have (designer.MaxNodes
    // and MaxEdges), which the server enforces and the editor can render.
    this.limits = (data && data.limits) || {}
    this.byName = new Map(this.kinds.map((k) => [k.name, k]))
    for (const k of this.kinds) {
      k.inputs = k.inputs || []
      k.outputs = k.outputs || []
      k.params = k.params || []
    }
  }

  // tooBig says why a design is over the limits, in the server's words
  // ("the design has 5000 nodes; at most 1000 are supported"), or ''.
  tooBig(design) {
    for (const what of ['nodes', 'edges']) {
      const n = ((design && design[what]) || []).length
      const max = this.limits[what]
      if (max > 0 && n > max) return `the design has ${n} ${what}; at most ${max} are supported`
    }
    return ''
  }

  kind(name) {
    return this.byName.get(name) || null
  }

  param(kind, name) {
    const k = typeof kind === 'string' ? this.kind(kind) : kind
    return (k && k.params.find((p) => p.name === name)) || null
  }

  // groupedKinds returns [group, kinds] in palette order; groups the
  // catalog's kinds name but "groups" does not come last.
  groupedKinds() {
    const order = [...this.groups]
    for (const k of this.kinds) if (!order.includes(k.group)) order.push(k.group)
    return order.map((g) => [g, this.kinds.filter((k) => k.group === g)]).filter(([, ks]) => ks.length > 0)
  }

  inputPorts(node) {
    const k = this.kind(node.kind)
    return k ? k.inputs : []
  }

  // outputPorts returns a node's output ports: its kind's, or for a kind
  // with branchOutputs one stream port per branch.
  outputPorts(node) {
    const k = this.kind(node.kind)
    if (!k) return []
    if (!k.branchOutputs) return k.outputs
    return branchesOf(node).map((b) => ({ name: b.name, types: ['stream'] }))
  }

  // isOperatorName says whether the kind's "name" parameter names the
  // operator (and so is the node's name) rather than a repartition topic.
  isOperatorName(kind) {
    const p = this.param(kind, 'name')
    return !!p && !/repartition|names the topic/i.test(p.description || '')
  }

  // paramApplies says whether a parameter with a "when" condition applies
  // to the node (its condition parameter, or that one's default, has one
  // of the values).
  paramApplies(node, p) {
    if (!p.when) return true
    const k = this.kind(node.kind)
    const cond = this.param(k, p.when.param)
    let v = node.params ? node.params[p.when.param] : undefined
    if (v === undefined || v === null || v === '') v = cond ? cond.default : undefined
    return (p.when.values || []).includes(v)
  }
}

// branchesOf returns the branches of a branch node ([] when unset or
// malformed).
export function branchesOf(node) {
  const bs = node && node.params && node.params.branches
  if (!Array.isArray(bs)) return []
  return bs.filter((b) => b && typeof b.name === 'string' && b.name !== '')
}

// DesignIndex answers questions about the types flowing in a design.
export class DesignIndex {
  constructor(catalog, design) {
    this.catalog = catalog
    this.design = design
    this.nodes = new Map(design.nodes.map((n) => [n.id, n]))
    this.types = new Map()
    this.visiting = new Set()
  }

  edgesInto(id, port) {
    return this.design.edges.filter((e) => e.to === id && (port === undefined || e.toPort === port))
  }

  edgesFrom(id, port) {
    return this.design.edges.filter((e) => e.from === id && (port === undefined || e.fromPort === port))
  }

  // inType is the type entering the node's first input, '' when unknown.
  inType(id) {
    const n = this.nodes.get(id)
    if (!n) return ''
    const ins = this.catalog.inputPorts(n)
    if (ins.length === 0) return ''
    const e = this.edgesInto(id, ins[0].name)[0]
    if (!e) return ''
    const t = this.outType(e.from, e.fromPort)
    return ins[0].types.includes(t) ? t : ''
  }

  // outType is the type leaving a node's output port, same-as-input and
  // grouped-input resolved; '' when it cannot be told.
  outType(id, port) {
    const key = id + '\u0000' + port
    if (this.types.has(key)) return this.types.get(key)
    if (this.visiting.has(id)) return ''
    this.visiting.add(id)
    let t = ''
    const n = this.nodes.get(id)
    if (n) {
      const p = this.catalog.outputPorts(n).find((p) => p.name === port)
      if (p && p.types.length > 0) {
        t = p.types[0]
        if (t === SAME_AS_INPUT) t = this.inType(id)
        else if (t === GROUPED_INPUT) t = grouped(this.inType(id))
      }
    }
    this.visiting.delete(id)
    this.types.set(key, t)
    return t
  }

  // possibleOutTypes lists what a port may give: its resolved type, or
  // while the input is unconnected every type it could become.
  possibleOutTypes(id, port) {
    const t = this.outType(id, port)
    if (t) return [t]
    const n = this.nodes.get(id)
    if (!n) return []
    const p = this.catalog.outputPorts(n).find((p) => p.name === port)
    if (!p || p.types.length === 0) return []
    const ins = this.catalog.inputPorts(n)
    const inTypes = ins.length ? ins[0].types : []
    if (p.types[0] === SAME_AS_INPUT) return inTypes
    if (p.types[0] === GROUPED_INPUT) return inTypes.map(grouped).filter(Boolean)
    return [p.types[0]]
  }

  // reaches says whether a path of edges leads from node a to node b.
  reaches(a, b) {
    const seen = new Set()
    const stack = [a]
    while (stack.length) {
      const x = stack.pop()
      if (x === b) return true
      if (seen.has(x)) continue
      seen.add(x)
      for (const e of this.design.edges) if (e.from === x) stack.push(e.to)
    }
    return false
  }

  // canConnect says why an edge from (from, fromPort) to (to, toPort)
  // may not be added ('' when it may). ignore is an edge (by object
  // identity) to leave out, the one being dragged.
  whyNotConnect(from, fromPort, to, toPort) {
    if (!from || !to) return 'no node'
    if (from === to) return 'a node cannot feed itself'
    const src = this.nodes.get(from)
    const dst = this.nodes.get(to)
    if (!src || !dst) return 'unknown node'
    const out = this.catalog.outputPorts(src).find((p) => p.name === fromPort)
    const inp = this.catalog.inputPorts(dst).find((p) => p.name === toPort)
    if (!out) return `no output ${fromPort}`
    if (!inp) return `no input ${toPort}`
    const existing = this.edgesInto(to, toPort)
    if (existing.some((e) => e.from === from && e.fromPort === fromPort)) return 'these ports are already connected'
    if (existing.length > 0 && !inp.multiple) return 'the input takes one edge (use a merge)'
    const types = this.possibleOutTypes(from, fromPort)
    if (types.length > 0 && !types.some((t) => inp.types.includes(t))) {
      return `${dst.kind} takes ${inp.types.join(' or ')}, not ${types.join(' or ')}`
    }
    if (this.reaches(to, from)) return 'the edge would make a cycle'
    return ''
  }
}

function grouped(t) {
  if (t === 'stream') return 'grouped-stream'
  if (t === 'table') return 'grouped-table'
  return ''
}

// newNodeId returns a short id for a new node of the kind: the kind's
// name and the next free number, e.g. filter-3.
export function newNodeId(kind, taken) {
  const prefix = kind
  let max = 0
  const re = new RegExp('^' + prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '-(\\d+)$')
  for (const id of taken) {
    const m = re.exec(id)
    if (m) max = Math.max(max, Number(m[1]))
  }
  let n = max + 1
  while (taken.has(`${prefix}-${n}`)) n++
  return `${prefix}-${n}`
}

// initialParams are the parameters a node gets when it is dropped from
// the palette: a branch node starts with two branches.
export function initialParams(kind) {
  if (kind.branchOutputs) {
    return { branches: [{ name: 'matched', predicate: '' }, { name: 'rest' }] }
  }
  return {}
}

// stableStringify is JSON.stringify with object keys sorted, for
// comparing designs.
export function stableStringify(v) {
  if (Array.isArray(v)) return '[' + v.map(stableStringify).join(',') + ']'
  if (v && typeof v === 'object') {
    return '{' + Object.keys(v).sort().filter((k) => v[k] !== undefined).map((k) => JSON.stringify(k) + ':' + stableStringify(v[k])).join(',') + '}'
  }
  return JSON.stringify(v === undefined ? null : v)
}
