// The designs list (/): every stored design with its revisions, when it
// changed and whether it is deployed (GET /api/deployments, with a link
// to its live view); the applications that processes started elsewhere
// run and report to this server (deployments marked watched) in the
// "Running elsewhere" section, each with its state and processes and a
// link to its live page, refreshed every 2 s; a search box filters the
// list as one types; create
// (a dialog asks for the name, which the server validates), open, rename
// (inline) and delete (asks once more, inline) designs, and upload a
// design JSON as a new design. Loaded as a classic script or a module;
// needs no library.
//
// Test ids: designs-search, designs-no-match, deployed-<id>,
// running-elsewhere, elsewhere-list, elsewhere-<id>, elsewhere-link-<id>,
// elsewhere-state-<id>, elsewhere-process-<id>-<process>, new-design,
// new-design-dialog, new-design-name, new-design-error, new-design-create,
// new-design-cancel.
;(function () {
  'use strict'

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue
      if (k === 'class') el.className = v
      else if (k === 'text') el.textContent = v
      else if (k === 'testid') el.setAttribute('data-testid', v)
      else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn)
      else if (k === 'value') el.value = v
      else el.setAttribute(k, v === true ? '' : String(v))
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue
      el.append(c instanceof Node ? c : document.createTextNode(String(c)))
    }
    return el
  }

  function byTestId(id) {
    return document.querySelector(`[data-testid="${CSS.escape(id)}"]`)
  }

  function csrfToken() {
    const meta = document.querySelector('meta[name="csrf-token"]')
    if (meta && meta.content) return meta.content
    for (const c of document.cookie.split(';')) {
      const [k, ...v] = c.trim().split('=')
      if (k === 'csrf_') return decodeURIComponent(v.join('='))
    }
    return ''
  }

  async function api(method, path, body) {
    const headers = { Accept: 'application/json' }
    const opts = { method, headers, credentials: 'same-origin' }
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json'
      opts.body = typeof body === 'string' ? body : JSON.stringify(body)
    }
    if (method !== 'GET') {
      const t = csrfToken()
      if (t) headers['X-Csrf-Token'] = t
    }
    const res = await fetch(path, opts)
    const text = await res.text()
    let data = null
    try {
      data = text ? JSON.parse(text) : null
    } catch {
      data = text
    }
    if (!res.ok) throw new Error((data && data.error) || (typeof data === 'string' && data) || `HTTP ${res.status}`)
    return data
  }

  function when(v) {
    if (!v) return ''
    const d = new Date(v)
    if (Number.isNaN(d.getTime())) return String(v)
    return d.toLocaleString()
  }

  const editorURL = (id) => `/designs/${encodeURIComponent(id)}`

  let list, status, search
  let deployed = new Map() // design id -> deployment

  function say(msg, bad) {
    status.textContent = msg
    status.className = 'bd-status' + (bad ? ' bd-bad' : '')
  }

  async function load() {
    let designs
    const deployments = api('GET', '/api/deployments').catch((err) => {
      say(`Cannot list the deployments: ${err.message}`, true)
      return null
    })
    try {
      designs = await api('GET', '/api/designs')
    } catch (err) {
      say(`Cannot list the designs: ${err.message}`, true)
      return
    }
    const deps = Array.isArray(await deployments) ? await deployments : []
    // An application found in telemetry is not a deployment of a design
    // here, even when it runs one of the same id: it is listed apart.
    deployed = new Map(deps.filter((d) => !d.watched).map((d) => [d.design || d.id, d]))
    render(Array.isArray(designs) ? designs : [])
    renderElsewhere(deps)
  }

  // refreshElsewhere lists the applications run elsewhere again: they
  // come, go and change state while the page is open.
  async function refreshElsewhere() {
    try {
      const deps = await api('GET', '/api/deployments')
      renderElsewhere(Array.isArray(deps) ? deps : [])
    } catch {
      // load() said why the deployments cannot be listed; the next
      // refresh tries again.
    }
  }

  const liveURL = (id) => `/live/${encodeURIComponent(id)}`

  // renderElsewhere fills the "Running elsewhere" section with the
  // watched applications, and shows it only when there is one.
  function renderElsewhere(deps) {
    const section = byTestId('running-elsewhere')
    const box = byTestId('elsewhere-list')
    if (!section || !box) return
    const apps = deps.filter((d) => d.watched)
    section.hidden = apps.length === 0
    box.textContent = ''
    if (apps.length === 0) return
    const body = h('tbody')
    for (const a of apps) {
      const procs = (a.processes || []).map((p) =>
        h(
          'li',
          { testid: `elsewhere-process-${a.id}-${p.process}`, 'data-state': p.state },
          h('strong', { text: p.process }),
          ` ${p.state}`,
          (p.instances || []).length ? ': ' + p.instances.map((i) => `${i.id} ${i.state}`).join(', ') : '',
        ),
      )
      body.append(
        h(
          'tr',
          { testid: `elsewhere-${a.id}`, 'data-state': a.state || '' },
          h('td', { class: 'bd-name' }, h('a', { href: liveURL(a.id), testid: `elsewhere-link-${a.id}`, text: a.designName || a.design || a.id, title: 'open the live view' })),
          h('td', {}, h('code', { text: a.applicationId })),
          h('td', {}, h('span', { class: `bd-state bd-state-${a.state || 'unknown'}`, testid: `elsewhere-state-${a.id}`, text: a.state || 'unknown' })),
          h('td', {}, procs.length ? h('ul', { class: 'bd-procs' }, procs) : 'no process reports'),
        ),
      )
    }
    box.append(
      h(
        'table',
        { class: 'bd-table' },
        h('thead', {}, h('tr', {}, ['Design', 'Application id', 'State', 'Processes'].map((t) => h('th', { text: t })))),
        body,
      ),
    )
  }

  // filter shows the rows whose name or id holds the search text.
  function filter() {
    const q = search ? search.value.trim().toLowerCase() : ''
    let shown = 0
    const rows = list.querySelectorAll('tr[data-id]')
    for (const tr of rows) {
      const hit = !q || tr.dataset.search.includes(q)
      tr.hidden = !hit
      if (hit) shown++
    }
    const none = byTestId('designs-no-match')
    if (none) none.hidden = shown > 0 || rows.length === 0
    list.dataset.shown = String(shown)
  }

  function render(designs) {
    list.textContent = ''
    if (designs.length === 0) {
      list.append(h('p', { class: 'bd-empty', testid: 'designs-empty', text: 'No designs yet. Create one, or upload a design JSON.' }))
      return
    }
    designs.sort((a, b) => String(b.updated || '').localeCompare(String(a.updated || '')))
    const body = h('tbody')
    for (const d of designs) body.append(row(d))
    list.append(
      h(
        'table',
        { class: 'bd-table' },
        h('thead', {}, h('tr', {}, ['Name', 'Revisions', 'Updated', 'Created', ''].map((t) => h('th', { text: t })))),
        body,
      ),
      h('p', { class: 'bd-empty', testid: 'designs-no-match', text: 'No design matches the search.', hidden: true }),
    )
    filter()
  }

  function row(d) {
    const dep = deployed.get(d.id)
    const badge = dep
      ? h('a', {
          class: 'bd-deployed',
          href: `/live/${encodeURIComponent(dep.id)}`,
          testid: `deployed-${d.id}`,
          title: `deployed: revision ${dep.revision}, ${dep.instances} instance(s), application id ${dep.applicationId}; open the live view`,
          text: 'deployed',
        })
      : null
    const nameCell = h('td', { class: 'bd-name' }, h('a', { href: editorURL(d.id), testid: `name-${d.id}`, text: d.name || d.id }), badge ? ' ' : null, badge)
    const actions = h('td', { class: 'bd-actions' })
    const tr = h(
      'tr',
      { testid: `design-${d.id}`, 'data-id': d.id, 'data-search': `${d.name || ''} ${d.id}`.toLowerCase(), 'data-deployed': dep ? 'true' : 'false' },
      nameCell,
      h('td', { text: String(d.revisions ?? d.latest ?? '') }),
      h('td', { text: when(d.updated) }),
      h('td', { text: when(d.created) }),
      actions,
    )
    const normal = () => {
      actions.textContent = ''
      actions.append(
        h('button', { type: 'button', testid: `open-${d.id}`, text: 'Open', on: { click: () => location.assign(editorURL(d.id)) } }),
        h('button', { type: 'button', testid: `rename-${d.id}`, text: 'Rename', on: { click: rename } }),
        h('button', { type: 'button', testid: `delete-${d.id}`, class: 'bd-danger', text: 'Delete', on: { click: confirmDelete } }),
      )
    }
    const rename = () => {
      const input = h('input', { type: 'text', testid: `new-name-${d.id}`, value: d.name || '', 'aria-label': 'new name' })
      let done = false
      const finish = async (ok) => {
        if (done) return
        done = true
        const name = input.value.trim()
        if (ok && name && name !== d.name) {
          try {
            await api('POST', `/api/designs/${encodeURIComponent(d.id)}/rename`, { name })
            say(`Renamed to ${name}.`)
          } catch (err) {
            say(`Rename failed: ${err.message}`, true)
          }
        }
        load()
      }
      input.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') finish(true)
        if (e.key === 'Escape') finish(false)
      })
      nameCell.textContent = ''
      nameCell.append(input)
      actions.textContent = ''
      actions.append(
        h('button', { type: 'button', testid: `save-name-${d.id}`, text: 'Save', on: { mousedown: (e) => e.preventDefault(), click: () => finish(true) } }),
        h('button', { type: 'button', testid: `cancel-name-${d.id}`, text: 'Cancel', on: { mousedown: (e) => e.preventDefault(), click: () => finish(false) } }),
      )
      input.addEventListener('blur', () => finish(true))
      input.focus()
      input.select()
    }
    const confirmDelete = () => {
      actions.textContent = ''
      actions.append(
        h('span', { class: 'bd-confirm', text: `Delete ${d.name || d.id} and all its revisions? ` }),
        h('button', {
          type: 'button',
          testid: `confirm-delete-${d.id}`,
          class: 'bd-danger',
          text: 'Delete',
          on: {
            click: async () => {
              try {
                await api('DELETE', `/api/designs/${encodeURIComponent(d.id)}`)
                say(`Deleted ${d.name || d.id}.`)
              } catch (err) {
                say(`Delete failed: ${err.message}`, true)
              }
              load()
            },
          },
        }),
        h('button', { type: 'button', testid: `cancel-delete-${d.id}`, text: 'Cancel', on: { click: normal } }),
      )
      actions.querySelector('button').focus()
    }
    normal()
    return tr
  }

  // create asks for the new design's name in a dialog; the server checks
  // it (the designer's one rule for names) and its answer shows in the
  // dialog until the name is fixed or the dialog cancelled.
  function create() {
    const old = byTestId('new-design-dialog')
    if (old) old.remove()
    const input = h('input', { type: 'text', testid: 'new-design-name', placeholder: 'e.g. Big orders per customer', 'aria-label': 'name of the new design', maxlength: '120' })
    const error = h('p', { class: 'bd-error', testid: 'new-design-error', role: 'alert' })
    const ok = h('button', { type: 'submit', class: 'bd-primary', testid: 'new-design-create', text: 'Create', disabled: true })
    const cancel = h('button', { type: 'button', testid: 'new-design-cancel', text: 'Cancel' })
    const form = h('form', { method: 'dialog' }, h('h2', { text: 'New design' }), h('label', {}, 'Name ', input), error, h('div', { class: 'bd-dialog-buttons' }, cancel, ok))
    const dialog = h('dialog', { class: 'bd-dialog', testid: 'new-design-dialog', 'aria-label': 'new design' }, form)
    document.body.append(dialog)
    const check = () => {
      ok.disabled = !input.value.trim()
      error.textContent = ''
    }
    input.addEventListener('input', check)
    cancel.addEventListener('click', () => dialog.remove())
    dialog.addEventListener('cancel', () => dialog.remove())
    form.addEventListener('submit', async (e) => {
      e.preventDefault()
      const name = input.value.trim()
      if (!name) return
      ok.disabled = true
      try {
        const res = await api('POST', '/api/designs', { name })
        const id = res && res.design && res.design.id
        if (!id) throw new Error('the server returned no design')
        location.assign(editorURL(id))
      } catch (err) {
        error.textContent = err.message
        ok.disabled = false
        input.focus()
      }
    })
    if (dialog.showModal) dialog.showModal()
    else dialog.setAttribute('open', '')
    input.focus()
  }

  async function upload(input) {
    const file = input.files && input.files[0]
    if (!file) return
    try {
      let design
      try {
        design = JSON.parse(await file.text())
      } catch (err) {
        throw new Error(`${file.name} is not JSON: ${err.message}`)
      }
      const res = await api('POST', '/api/designs/import', design)
      const id = res && res.design && res.design.id
      if (!id) throw new Error('the server returned no design')
      location.assign(editorURL(id))
    } catch (err) {
      say(`Upload failed: ${err.message}`, true)
    } finally {
      input.value = ''
    }
  }

  function start() {
    list = byTestId('designs-list')
    if (!list) {
      list = h('div', { testid: 'designs-list' })
      document.body.append(list)
    }
    list.classList.add('bd-list')
    const bar = h('div', { class: 'bd-bar' })
    list.parentNode.insertBefore(bar, list)
    let btn = byTestId('new-design')
    if (!btn) {
      btn = h('button', { type: 'button', testid: 'new-design', text: 'New design' })
      bar.append(btn)
    }
    btn.classList.add('bd-primary')
    btn.addEventListener('click', (e) => {
      e.preventDefault()
      create()
    })
    let file = byTestId('import-json')
    if (!file) {
      file = h('input', { type: 'file', accept: '.json,application/json', testid: 'import-json', class: 'bd-file' })
      bar.append(h('label', { class: 'bd-file-label', title: 'upload a design JSON as a new design' }, 'Upload JSON', file))
    }
    file.addEventListener('change', () => upload(file))
    search = h('input', { type: 'search', testid: 'designs-search', class: 'bd-search', placeholder: 'Search designs', 'aria-label': 'search designs by name or id' })
    search.addEventListener('input', filter)
    status = h('span', { class: 'bd-status', testid: 'status', role: 'status' })
    bar.append(search, status)
    load()
    setInterval(refreshElsewhere, 2000)
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start)
  else start()
})()
