// The JSON API of the braid server. Errors come as
// {"error": message, "problems": [{node, kind, param, message}]}.

export class ApiError extends Error {
  constructor(status, body) {
    const msg = (body && typeof body === 'object' && body.error) || (typeof body === 'string' && body) || `HTTP ${status}`
    super(msg)
    this.status = status
    this.body = body
    this.problems = (body && Array.isArray(body.problems) && body.problems) || []
  }
}

// csrfToken finds a CSRF token the server may want on mutating requests:
// a <meta name="csrf-token"> or fiber's default cookie "csrf_".
function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]')
  if (meta && meta.content) return meta.content
  for (const c of document.cookie.split(';')) {
    const [k, ...v] = c.trim().split('=')
    if (k === 'csrf_') return decodeURIComponent(v.join('='))
  }
  return ''
}

// request sends a request and returns the raw Response, throwing an
// ApiError for a status that is not 2xx.
export async function request(method, path, body) {
  const headers = { Accept: 'application/json' }
  const opts = { method, headers, credentials: 'same-origin' }
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json'
    opts.body = typeof body === 'string' ? body : JSON.stringify(body)
  }
  if (method !== 'GET' && method !== 'HEAD') {
    const token = csrfToken()
    if (token) headers['X-Csrf-Token'] = token
  }
  const res = await fetch(path, opts)
  if (!res.ok) {
    const text = await res.text()
    let data = text
    try {
      data = text ? JSON.parse(text) : null
    } catch {
      // not JSON: keep the text
    }
    throw new ApiError(res.status, data)
  }
  return res
}

// api sends a request and returns the decoded JSON answer (null when
// there is none).
export async function api(method, path, body) {
  const res = await request(method, path, body)
  const text = await res.text()
  if (!text) return null
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

// filename takes the name of a download from Content-Disposition.
export function filename(res, fallback) {
  const cd = res.headers.get('Content-Disposition') || ''
  const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(cd)
  return m ? decodeURIComponent(m[1]) : fallback
}

// revisionNumber reads a revision as the server gives it: a Revision
// object ({number, saved, message}) or a bare number.
export function revisionNumber(rev) {
  if (rev && typeof rev === 'object') return rev.number ?? rev.Number ?? null
  return typeof rev === 'number' ? rev : null
}
