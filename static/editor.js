// The design editor (/designs/:id). This file loads the vendored
// libraries the editor needs if the page has not (X6, dagre), then the
// editor's modules from static/editor/, so that the page may include it
// either as a classic script or as a module; static/editor/main.js does
// the work.
;(function () {
  const here = (document.currentScript && document.currentScript.src) || '/static/editor.js'
  const base = new URL('.', new URL(here, location.href))

  function load(global, path) {
    if (window[global]) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const s = document.createElement('script')
      s.src = new URL(path, base).href
      s.onload = () => (window[global] ? resolve() : reject(new Error(`${path} did not define ${global}`)))
      s.onerror = () => reject(new Error(`cannot load ${path}`))
      document.head.append(s)
    })
  }

  function fail(err) {
    console.error(err)
    const p = document.createElement('p')
    p.className = 'be-fatal'
    p.setAttribute('data-testid', 'editor-error')
    p.textContent = 'The editor failed to start: ' + (err && err.message ? err.message : err)
    document.body.prepend(p)
  }

  Promise.all([load('X6', 'vendor/x6/x6.min.js'), load('dagre', 'vendor/dagre/dagre.min.js')])
    .then(() => import(new URL('editor/main.js', base).href))
    .then((m) => m.start())
    .catch(fail)
})()
