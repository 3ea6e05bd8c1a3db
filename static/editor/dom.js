// Small DOM helpers: element creation, lookup by data-testid, debouncing.

// h creates an element. attrs: class, text, testid, dataset (object),
// on (object of event listeners), style (string), and any attribute or
// property (value, checked, disabled, hidden, placeholder, ...).
// Children may be nodes, strings or arrays of them; null is skipped.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue
    switch (k) {
      case 'class':
        el.className = v
        break
      case 'text':
        el.textContent = v
        break
      case 'testid':
        el.setAttribute('data-testid', v)
        break
      case 'dataset':
        Object.assign(el.dataset, v)
        break
      case 'on':
        for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn)
        break
      case 'style':
        el.setAttribute('style', v)
        break
      case 'value':
      case 'checked':
      case 'selected':
        el[k] = v
        break
      default:
        el.setAttribute(k, v === true ? '' : String(v))
    }
  }
  append(el, children)
  return el
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue
    if (Array.isArray(c)) append(el, c)
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)))
  }
}

// byTestId returns the element with the given data-testid, or null.
export function byTestId(id, root = document) {
  return root.querySelector(`[data-testid="${CSS.escape(id)}"]`)
}

// clear removes an element's children and returns it.
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild)
  return el
}

// show sets whether an element is visible (the hidden attribute).
export function show(el, visible) {
  if (visible) el.removeAttribute('hidden')
  else el.setAttribute('hidden', '')
}

// debounce calls fn once, ms after the last of a burst of calls.
export function debounce(fn, ms) {
  let timer = null
  const d = (...args) => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      timer = null
      fn(...args)
    }, ms)
  }
  d.cancel = () => clearTimeout(timer)
  d.flush = (...args) => {
    clearTimeout(timer)
    timer = null
    fn(...args)
  }
  return d
}

// download saves a Blob as a file.
export function download(blob, filename) {
  const url = URL.createObjectURL(blob)
  const a = h('a', { href: url, download: filename, style: 'display:none' })
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10000)
}

// formatTime shows milliseconds since the epoch as an ISO time of day
// (UTC), e.g. 22:13:20.000; the full date is in formatDateTime.
export function formatTime(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return String(ms ?? '')
  const d = new Date(ms)
  if (Number.isNaN(d.getTime())) return String(ms)
  return d.toISOString().slice(11, 23)
}

export function formatDateTime(v) {
  if (v === undefined || v === null || v === '') return ''
  const d = typeof v === 'number' ? new Date(v) : new Date(String(v))
  if (Number.isNaN(d.getTime())) return String(v)
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z')
}

// formatDuration shows a duration given in nanoseconds (Go's
// time.Duration in JSON) or as a string ("1h0m0s") the way Go would.
export function formatDuration(v) {
  if (typeof v === 'string') return v
  if (typeof v !== 'number' || v === 0) return v === 0 ? '0s' : ''
  let ms = v / 1e6
  const parts = []
  const units = [
    ['d', 86400000],
    ['h', 3600000],
    ['m', 60000],
    ['s', 1000],
  ]
  for (const [u, n] of units) {
    if (ms >= n) {
      const q = Math.floor(ms / n)
      parts.push(q + u)
      ms -= q * n
    }
  }
  if (ms > 0) parts.push(Math.round(ms) + 'ms')
  return parts.join('') || '0s'
}

// json shows a value compactly.
export function json(v) {
  if (v === undefined) return ''
  try {
    return JSON.stringify(v)
  } catch {
    return String(v)
  }
}
