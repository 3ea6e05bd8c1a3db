// Sample records for the preview, generated from the design: the fields
// of value that its expressions read (value.amount, value.customer, ...)
// get plausible values (numbers around the thresholds the expressions
// compare with, strings from the literals they compare with or a small
// set of names, the event time for the field a source takes its
// timestamps from), over 30 s of event time, so that windows close.
// Pure functions: no DOM.

// BASE_TIME is the first sample's timestamp: 2023-11-14T22:13:20Z, a
// multiple of every common window size.
export const BASE_TIME = 1700000000000

const POOLS = {
  customer: ['alice', 'bob', 'carol', 'dave'],
  user: ['u-1', 'u-2', 'u-3', 'u-4'],
  country: ['DE', 'FR', 'US', 'JP'],
  region: ['eu', 'us', 'apac'],
  city: ['Berlin', 'Paris', 'Austin'],
  currency: ['EUR', 'USD', 'JPY'],
  status: ['ok', 'pending', 'test'],
  page: ['/home', '/cart', '/checkout'],
  sensor: ['s-1', 's-2', 's-3'],
  device: ['d-1', 'd-2', 'd-3'],
  sku: ['sku-1', 'sku-2', 'sku-3'],
  product: ['p-1', 'p-2', 'p-3'],
  category: ['books', 'games', 'tools'],
  merchant: ['m-1', 'm-2', 'm-3'],
  tier: ['gold', 'silver'],
  type: ['a', 'b', 'c'],
  name: ['Ada', 'Grace', 'Linus'],
}

const NUMERIC = /^(amount|price|total|qty|quantity|count|score|size|balance|credit|limit|duration|bytes|value|temperature|temp|reading|latency|age|weight|cost|sum|rating|level|items?count)$/i
const TIME = /^(ts|time|timestamp|eventtime|event_time|.*At|.*Time|.*_at)$/
const BOOL = /^(is[A-Z_].*|has[A-Z_].*|active|enabled|valid|flag|big)$/
const LIST = /^(items|lines|tags|products|entries|events|values)$/i

// rng is a small deterministic generator, so that the same design gets
// the same samples.
function rng(seed) {
  let s = seed >>> 0 || 1
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 4294967296
  }
}

function hash(str) {
  let x = 2166136261
  for (let i = 0; i < str.length; i++) x = Math.imul(x ^ str.charCodeAt(i), 16777619)
  return x >>> 0
}

// expressions returns every expression text of the design.
export function expressions(design, catalog) {
  const out = []
  for (const n of design.nodes || []) {
    const kind = catalog && catalog.kind(n.kind)
    const params = n.params || {}
    for (const [k, v] of Object.entries(params)) {
      if (k === 'branches' && Array.isArray(v)) {
        for (const b of v) if (b && b.predicate) out.push(b.predicate)
        continue
      }
      const p = kind && kind.params.find((p) => p.name === k)
      if (typeof v === 'string' && (!kind || (p && p.type === 'expression'))) out.push(v)
    }
  }
  return out
}

// fieldsOf finds the fields of value the expressions read and what is
// known of each: compared numbers, compared strings, arithmetic.
export function fieldsOf(exprs) {
  const fields = new Map()
  const get = (f) => {
    if (!fields.has(f)) fields.set(f, { numbers: [], strings: [], numeric: false, list: false, sub: new Set() })
    return fields.get(f)
  }
  for (const src of exprs) {
    const re = /\bvalue(?:\.([A-Za-z_]\w*)|\[\s*["']([^"']+)["']\s*\])/g
    let m
    while ((m = re.exec(src))) {
      const f = m[1] || m[2]
      const info = get(f)
      const after = src.slice(re.lastIndex)
      const before = src.slice(0, m.index)
      let c
      if ((c = /^\s*(>=|<=|>|<|==|!=)\s*(-?\d+(?:\.\d+)?)/.exec(after))) {
        info.numeric = true
        info.numbers.push(Number(c[2]))
      } else if ((c = /^\s*(==|!=)\s*["']([^"']*)["']/.exec(after))) {
        info.strings.push(c[2])
      } else if ((c = /^\s*in\s*\[([^\]]*)\]/.exec(after))) {
        for (const s of c[1].matchAll(/["']([^"']*)["']/g)) info.strings.push(s[1])
      } else if (/^\s*[*/%+-]\s*[\d(a-z]/.test(after) || /[*/%-]\s*$/.test(before) || /\+\s*$/.test(before)) {
        info.numeric = true
      } else if ((c = /^\.([A-Za-z_]\w*)/.exec(after))) {
        info.sub.add(c[1])
      }
      if ((c = /(-?\d+(?:\.\d+)?)\s*(>=|<=|>|<|==|!=)\s*$/.exec(before))) {
        info.numeric = true
        info.numbers.push(Number(c[1]))
      }
      if (/\b(map|filter|all|any|none|one|count|len|sum)\(\s*$/.test(before)) info.list = true
    }
  }
  return fields
}

// valueFor makes a value for a field.
// The last record of a stream is "big" (numbers above every threshold),
// so that it likely passes filters and moves stream time on downstream.
function valueFor(field, info, i, t, rand, last = false) {
  if (TIME.test(field)) return t
  if (info && info.list || LIST.test(field)) {
    const n = 1 + Math.floor(rand() * 3)
    return Array.from({ length: n }, (_, j) => ({ sku: `sku-${1 + ((i + j) % 4)}`, qty: 1 + Math.floor(rand() * 3), price: 5 + Math.floor(rand() * 40) }))
  }
  if (info && info.strings.length) {
    const pool = [...new Set(info.strings)]
    // Mostly the literals, now and then something else.
    if (last) return pool[0]
    return i % 5 === 4 ? `other-${1 + (i % 3)}` : pool[i % pool.length]
  }
  if (BOOL.test(field)) return i % 3 === 0
  if ((info && info.numeric) || NUMERIC.test(field)) {
    const ts = info ? info.numbers.filter((n) => Number.isFinite(n)) : []
    if (ts.length && last) return Math.max(...ts.map((n) => Math.abs(n))) * 2.5 || 100
    if (ts.length) {
      // Spread around the thresholds: below, at and above them.
      const t0 = ts[i % ts.length]
      const f = [0.4, 0.9, 1, 1.3, 2.5][Math.floor(rand() * 5)]
      const v = t0 === 0 ? Math.round((rand() - 0.5) * 20) : t0 * f
      return Math.round(v * 100) / 100
    }
    return 5 + Math.floor(rand() * 195)
  }
  for (const [k, pool] of Object.entries(POOLS)) {
    if (field.toLowerCase().includes(k)) return pool[Math.floor(rand() * pool.length)]
  }
  if (/id$/i.test(field)) return `${field.replace(/id$/i, '') || 'id'}-${i + 1}`
  return `${field}-${1 + Math.floor(rand() * 4)}`
}

// parseDuration reads a Go duration ("1m30s", "500ms") in milliseconds;
// NaN when it is not one.
export function parseDuration(s) {
  if (typeof s !== 'string' || !s.trim()) return NaN
  if (s.trim() === '0') return 0
  const units = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60000, h: 3600000 }
  let total = 0
  let rest = s.trim()
  const re = /^([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/
  while (rest) {
    const m = re.exec(rest)
    if (!m) return NaN
    total += Number(m[1]) * units[m[2]]
    rest = rest.slice(m[0].length)
  }
  return total
}

// timeSpan is how much event time the samples of a stream cover and
// when the last one comes: long enough for the design's windows (size or
// gap plus grace) to close.
export function timeSpan(design) {
  let need = 0
  for (const n of design.nodes || []) {
    if (n.kind !== 'windowed-by') continue
    const p = n.params || {}
    const len = parseDuration(p.size || p.gap || '') || 0
    const grace = parseDuration(p.grace || '') || 0
    need = Math.max(need, len + grace)
  }
  const span = Math.max(30000, 2 * need)
  return { span, last: need ? span + need + 1000 : 36000 }
}

// generateSamples returns sample records ({key, value, timestamp}) for a
// source node: a stream gets 24 records over 30 s of event time (longer
// for long windows), the last of them after a pause as long as the
// longest window and its grace, so that stream time closes the windows
// before it; a table gets one row per key.
export function generateSamples(design, node, catalog) {
  const params = node.params || {}
  const topic = params.topic || node.id
  const rand = rng(hash(topic))
  const keySerde = params.keySerde || 'string'
  const valueSerde = params.valueSerde || 'json'
  const fields = fieldsOf(expressions(design, catalog))
  // The field the source takes event time from.
  const tsm = /^\s*value\.([A-Za-z_]\w*)\s*$/.exec(params.timestamp || '')
  const tsField = tsm ? tsm[1] : null
  const names = [...fields.keys()]
  if (tsField && !names.includes(tsField)) names.push(tsField)
  if (names.length === 0) {
    // Nothing read: records that look like orders.
    names.push('customer', 'amount', 'ts')
  }
  const table = node.kind === 'source-table'
  const { span, last } = timeSpan(design)
  const count = table ? 4 : 24
  const records = []
  const entityPool = POOLS[Object.keys(POOLS).find((k) => topic.toLowerCase().includes(k))] || null
  for (let i = 0; i < count; i++) {
    const t = table ? BASE_TIME + i * 100 : BASE_TIME + (i < count - 1 ? Math.round((i * span) / (count - 1)) : last)
    let value
    if (valueSerde === 'json' || valueSerde === 'windowed-json') {
      value = {}
      for (const f of names) {
        value[f] = f === tsField ? t : valueFor(f, fields.get(f), i, t, rand, !table && i === count - 1)
      }
    } else if (valueSerde === 'int64') {
      value = 1 + Math.floor(rand() * 100)
    } else {
      const words = ['the quick brown fox', 'jumps over', 'the lazy dog', 'hello stream world']
      value = words[i % words.length]
    }
    let key
    if (keySerde === 'int64') key = table ? i + 1 : 1 + (i % 5)
    else if (table) key = entityPool ? entityPool[i % entityPool.length] : `${topic}-${i + 1}`
    else if (value && typeof value === 'object' && typeof value.customer === 'string') key = `order-${i + 1}`
    else key = `${topic}-${1 + (i % 5)}`
    records.push({ key, value, timestamp: t })
  }
  return records
}

// samplesText writes records one JSON object per line.
export function samplesText(records) {
  return records.map((r) => JSON.stringify(r)).join('\n')
}

// parseSamples reads one JSON object per line ({key, value, timestamp};
// blank lines and lines starting with // are skipped) and returns
// {records, errors: [{line, message}]}.
export function parseSamples(text) {
  const records = []
  const errors = []
  text.split('\n').forEach((line, i) => {
    const s = line.trim()
    if (!s || s.startsWith('//')) return
    try {
      const r = JSON.parse(s)
      if (!r || typeof r !== 'object' || Array.isArray(r)) throw new Error('not a JSON object')
      const ts = r.timestamp === undefined ? 0 : Number(r.timestamp)
      if (!Number.isFinite(ts)) throw new Error('timestamp is not a number')
      records.push({ key: r.key === undefined ? null : r.key, value: r.value === undefined ? null : r.value, timestamp: Math.trunc(ts) })
    } catch (err) {
      errors.push({ line: i + 1, message: err.message })
    }
  })
  return { records, errors }
}
