// Formatting of the live view's numbers and times, and small helpers
// over a snapshot's deployment.

// clock shows milliseconds since the epoch as a time of day (UTC),
// 14:03:27.120; unknown (-1, null) is "—".
export function clock(ms, { millis = true } = {}) {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return '—'
  const s = new Date(ms).toISOString()
  return millis ? s.slice(11, 23) : s.slice(11, 19)
}

// rate shows records per second.
export function rate(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—'
  if (v >= 10000) return (v / 1000).toFixed(1) + 'k'
  if (v >= 100) return Math.round(v).toString()
  if (v >= 10) return v.toFixed(1)
  return v.toFixed(v === 0 ? 0 : 2)
}

// count shows a count compactly (12, 1.2k, 3.4M).
export function count(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—'
  const a = Math.abs(v)
  if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M'
  if (a >= 1e4) return (v / 1e3).toFixed(1) + 'k'
  return String(Math.round(v))
}

// millis shows a duration in milliseconds (850 ms, 2.4 s, 3m 05s).
export function millis(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—'
  if (v < 1000) return Math.round(v) + ' ms'
  if (v < 60000) return (v / 1000).toFixed(1) + ' s'
  const m = Math.floor(v / 60000)
  const s = Math.round((v % 60000) / 1000)
  return `${m}m ${String(s).padStart(2, '0')}s`
}

// bytes shows a size in decimal units (512 B, 39.5 MB), as the monitor's
// messages do (monitor/snapshots.go byteSize).
export function bytes(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—'
  if (v >= 1e9) return (v / 1e9).toFixed(1) + ' GB'
  if (v >= 1e6) return (v / 1e6).toFixed(1) + ' MB'
  if (v >= 1e3) return (v / 1e3).toFixed(1) + ' kB'
  return Math.round(v) + ' B'
}

// age shows how old a time (unix ms) is at now: 2m 05s, 850 ms.
export function age(ms, now = Date.now()) {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) return '—'
  return millis(Math.max(0, now - ms))
}

// since shows how long ago a time (ms or an RFC 3339 string) was.
export function since(t, now = Date.now()) {
  const ms = typeof t === 'number' ? t : Date.parse(t)
  if (!Number.isFinite(ms) || ms <= 0) return ''
  const d = Math.max(0, now - ms)
  if (d < 1000) return 'just now'
  return millis(d).replace(/\.\d s$/, ' s') + ' ago'
}

// time reads a time given as ms since the epoch or as a string.
export function toMillis(t) {
  if (typeof t === 'number') return t
  if (typeof t === 'string' && t) {
    const n = Date.parse(t)
    return Number.isFinite(n) ? n : NaN
  }
  return NaN
}

// instanceOrder sorts instance ids by their number (instance-2 before
// instance-10).
export function byInstance(a, b) {
  const na = parseInt(String(a).replace(/^\D+/, ''), 10)
  const nb = parseInt(String(b).replace(/^\D+/, ''), 10)
  if (Number.isFinite(na) && Number.isFinite(nb) && na !== nb) return na - nb
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0
}

// byTask sorts task ids "<subtopology>_<partition>" numerically.
export function byTask(a, b) {
  const [sa, pa] = String(a).split('_').map(Number)
  const [sb, pb] = String(b).split('_').map(Number)
  if (sa !== sb) return (sa || 0) - (sb || 0)
  if (pa !== pb) return (pa || 0) - (pb || 0)
  return String(a) < String(b) ? -1 : 1
}

// subtopologyOf is the sub-topology of a task id ("1_2" -> 1).
export function subtopologyOf(task) {
  return Number(String(task).split('_')[0])
}

// activeTasks lists [instance, task] for every active task of running or
// rebalancing instances of a deployment.
export function activeTasks(dep) {
  const out = []
  for (const inst of (dep && dep.instances) || []) {
    if (inst.state === 'crashed' || inst.state === 'stopped' || inst.state === 'failed') continue
    for (const t of inst.tasks || []) if (t.role === 'active') out.push([inst, t])
  }
  return out
}

// laggingTasks are the active tasks of the live instances and the failed
// tasks of failed instances that no one took over (their lag is the
// broker's: nothing consumes their partitions), each with its instance.
export function laggingTasks(dep) {
  const out = activeTasks(dep)
  for (const inst of (dep && dep.instances) || []) {
    if (inst.state !== 'failed') continue
    for (const t of inst.tasks || []) if (t.role === 'active' && t.state === 'failed') out.push([inst, t])
  }
  return out
}
