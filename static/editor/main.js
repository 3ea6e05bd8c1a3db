// The editor page: lays out the page's containers (toolbar, palette,
// canvas, minimap, properties, problems, revisions, compile view,
// preview panel, unsaved indicator; any the page lacks are created),
// loads the catalog and the design, and wires the parts together:
// saving, the unsaved-changes indicator, undo/redo, layout, export and
// import, and deploying (deploy.js).

import { h, byTestId, clear, show, debounce, download } from './dom.js'
import { api, request, filename, revisionNumber } from './api.js'
import { Catalog, stableStringify } from './catalog.js'
import { Canvas, clone } from './graph.js'
import { renderPalette } from './palette.js'
import { Properties } from './properties.js'
import { Problems } from './problems.js'
import { Revisions } from './revisions.js'
import { CompileView } from './compile.js'
import { Preview } from './preview.js'
import { DeployControls } from './deploy.js'

export async function start() {
  const id = document.body.dataset.designId
  if (!id) throw new Error('the page has no data-design-id')
  const layout = buildLayout()
  const [catalog, loaded] = await Promise.all([api('GET', '/api/catalog'), api('GET', `/api/designs/${encodeURIComponent(id)}`)])
  const cat = new Catalog(catalog)
  // A design over the limits would freeze the tab while X6 renders it (a
  // design of 5,000 nodes takes minutes): say so instead, and open nothing
  // that could save over it.
  const why = cat.tooBig(loaded && loaded.design)
  if (why) {
    refuse(layout, id, why)
    document.body.dataset.editorRefused = 'true'
    return null
  }
  const editor = new Editor(id, cat, loaded, layout)
  window.braidEditor = editor // for debugging and tests
  document.body.dataset.editorReady = 'true'
  performance.mark('braid-editor-ready')
  return editor
}

// refuse puts the reason a design is not opened where its canvas would be,
// with a link to its JSON and one back to the designs list.
function refuse(el, id, why) {
  const base = `/api/designs/${encodeURIComponent(id)}`
  clear(el.canvas)
  el.canvas.append(
    h(
      'div',
      { class: 'be-too-big', testid: 'design-too-big', role: 'alert' },
      h('h2', { text: 'This design is too big to open' }),
      h('p', { text: `The editor cannot show it: ${why}.` }),
      h('p', { text: 'Split it into smaller designs. Its JSON can still be downloaded.' }),
      h('p', {}, h('a', { href: `${base}/export.json`, testid: 'too-big-download', text: 'Download JSON' }), ' · ', h('a', { href: '/', text: 'All designs' })),
    ),
  )
  show(el.minimap, false)
}

// slot returns the page's container with the test id, or a new one.
function slot(testid, tag = 'div') {
  return byTestId(testid) || h(tag, { testid })
}

// buildLayout moves the containers into the editor's grid:
//   toolbar (with the unsaved indicator)
//   palette + revisions | canvas (minimap over it) | properties + problems
//   compile view and preview panel below, when open
function buildLayout() {
  const el = {}
  for (const id of ['toolbar', 'palette', 'canvas', 'minimap', 'properties', 'problems', 'revisions', 'compile-view', 'preview-panel', 'unsaved']) {
    el[id] = slot(id, id === 'unsaved' ? 'span' : 'div')
  }
  // The shell goes where the first of the containers was.
  const anchor = ['toolbar', 'canvas', 'palette'].map((k) => el[k]).find((e) => e.isConnected)
  const mark = document.createComment('braid editor')
  if (anchor) anchor.parentNode.insertBefore(mark, anchor)
  else document.body.append(mark)
  const shell = h(
    'div',
    { class: 'be-shell', testid: 'editor' },
    h('div', { class: 'be-top' }, el.toolbar),
    h('div', { class: 'be-left' }, el.palette, el.revisions),
    h('div', { class: 'be-center' }, el.canvas, el.minimap),
    h('div', { class: 'be-right' }, el.properties, el.problems),
    h('div', { class: 'be-bottom' }, el['compile-view'], el['preview-panel']),
  )
  mark.replaceWith(shell)
  // Whatever else the page put in the containers' old parent stays.
  el.toolbar.classList.add('be-toolbar')
  el.canvas.classList.add('be-canvas')
  el.minimap.classList.add('be-minimap')
  el.unsaved.classList.add('be-unsaved')
  show(el['compile-view'], false)
  show(el['preview-panel'], false)
  show(el.unsaved, false)
  // The shell fills the window below whatever is above it.
  const fit = () => {
    const top = shell.getBoundingClientRect().top + window.scrollY
    shell.style.height = Math.max(480, window.innerHeight - top) + 'px'
  }
  fit()
  window.addEventListener('resize', fit)
  el.shell = shell
  return el
}

class Editor {
  constructor(id, catalog, loaded, el) {
    this.id = id
    this.catalog = catalog
    this.el = el
    const design = (loaded && loaded.design) || { id, name: id, version: 1, nodes: [], edges: [] }
    this.meta = { id, name: design.name || '', version: design.version || 1 }
    this.revision = revisionNumber(loaded && loaded.revision)
    this.shown = this.revision

    this.canvas = new Canvas({
      container: el.canvas,
      minimap: el.minimap,
      catalog,
      onChange: () => this.changed(),
      onSelect: (cells) => this.properties.show(cells),
      onNodeClick: (nid) => this.preview.focusNode(nid),
      onHistory: () => this.updateButtons(),
      status: (msg, kind) => this.status(msg, kind),
    })
    renderPalette(el.palette, catalog, this.canvas)
    this.properties = new Properties(el.properties, {
      catalog,
      canvas: this.canvas,
      status: (m, k) => this.status(m, k),
      topics: () => this.topics(),
    })
    this.problems = new Problems(el.problems, {
      design: () => this.design(),
      onProblems: (ps) => {
        this.canvas.setProblemNodes(ps.filter((p) => p.node).map((p) => p.node))
        this.properties.setProblems(ps)
      },
      select: (p) => this.selectProblem(p),
    })
    this.revisions = new Revisions(el.revisions, {
      designId: id,
      current: () => this.shown,
      open: (d, n) => this.openRevision(d, n),
      restore: async (d, n) => {
        if (this.openRevision(d, n)) await this.save(`restore of revision ${n}`)
      },
    })
    this.compileView = new CompileView(el['compile-view'], {
      design: () => this.design(),
      onProblems: (ps) => this.problems.set(ps),
      highlight: (ids) => this.canvas.highlightNodes(ids),
      selectNode: (nid) => this.canvas.selectNode(nid),
      nodeLabel: (nid) => this.nodeLabel(nid),
    })
    this.preview = new Preview(el['preview-panel'], {
      designId: id,
      catalog,
      design: () => this.design(),
      onProblems: (ps) => this.problems.set(ps),
      selectNode: (nid) => this.canvas.selectNode(nid),
      nodeLabel: (nid) => this.nodeLabel(nid),
      badges: (c) => this.canvas.setBadges(c),
    })
    this.buildToolbar()

    performance.mark('braid-load-start')
    this.canvas.load(design)
    if (this.canvas.needsLayout()) this.canvas.layout()
    this.canvas.history.clean()
    performance.measure('braid-load', 'braid-load-start') // the time the canvas takes to show the design
    this.saved = this.snapshot()
    requestAnimationFrame(() => this.canvas.fit())
    this.updateTitle()
    this.updateDirty()
    this.updateButtons()
    this.problems.check(true)
    this.revisions.refresh()

    document.addEventListener(
      'keydown',
      (e) => {
        if ((e.ctrlKey || e.metaKey) && !e.shiftKey && !e.altKey && e.key.toLowerCase() === 's') {
          e.preventDefault()
          this.save()
        }
      },
      true,
    )
    window.addEventListener('beforeunload', (e) => {
      if (this.dirty) {
        e.preventDefault()
        e.returnValue = ''
      }
    })
  }

  // design is the design as it stands on the canvas.
  design() {
    const { nodes, edges } = this.canvas.toDesign()
    return { id: this.meta.id, name: this.meta.name, version: this.meta.version, nodes, edges }
  }

  // snapshot is the design as a string for comparing: nodes by id and
  // edges sorted, so that order does not count as a change.
  snapshot(design = this.design()) {
    const key = (e) => [e.from, e.fromPort, e.to, e.toPort].join('\u0000')
    const nodes = [...design.nodes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    const edges = [...design.edges].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
    return stableStringify({ ...design, nodes, edges })
  }

  nodeLabel(id) {
    const d = this.canvas.nodeData(id)
    if (!d) return id
    return d.name || (d.params && typeof d.params.name === 'string' && d.params.name) || id
  }

  topics() {
    const out = new Set()
    for (const n of this.design().nodes) if (n.params && typeof n.params.topic === 'string' && n.params.topic) out.add(n.params.topic)
    return [...out].sort()
  }

  // changed runs after every change of the graph (debounced a little).
  changed = debounce(() => {
    this.updateDirty()
    this.updateButtons()
    this.properties.refresh()
    this.problems.schedule()
  }, 60)

  updateDirty() {
    this.dirty = this.snapshot() !== this.saved
    show(this.el.unsaved, this.dirty)
    this.el.unsaved.textContent = this.dirty ? '● unsaved' : ''
    this.el.unsaved.title = this.dirty ? 'unsaved changes: save (Ctrl+S) to keep them as a new revision' : ''
    document.body.dataset.dirty = this.dirty ? 'true' : 'false'
    if (this.buttons) this.buttons.save.classList.toggle('be-primary', this.dirty)
  }

  updateButtons() {
    if (!this.buttons) return
    this.buttons.undo.disabled = !this.canvas.canUndo()
    this.buttons.redo.disabled = !this.canvas.canRedo()
  }

  updateTitle() {
    document.title = `${this.meta.name || this.id} · braid`
    if (this.nameEl) this.nameEl.textContent = this.meta.name || '(unnamed)'
  }

  status(msg, kind = '') {
    if (!this.statusEl) return
    this.statusEl.textContent = msg
    this.statusEl.className = 'be-status' + (kind === 'error' ? ' be-bad' : kind === 'ok' ? ' be-ok' : '')
    clearTimeout(this.statusTimer)
    this.statusTimer = setTimeout(() => (this.statusEl.textContent = ''), kind === 'error' ? 15000 : 6000)
  }

  // button returns the page's button with the test id (if the template
  // has one) wired to fn, or a new one in the toolbar.
  button(testid, label, title, fn, parent) {
    let b = byTestId(testid)
    if (!b) {
      b = h('button', { type: 'button', testid, title, text: label, dataset: { created: 'true' } })
      parent.append(b)
    }
    b.addEventListener('click', (e) => {
      e.preventDefault()
      fn()
    })
    return b
  }

  buildToolbar() {
    const bar = this.el.toolbar
    const group = (...kids) => h('div', { class: 'be-tool-group' }, ...kids)
    // The page may already show the design's name (data-testid
    // "design-name"); the rename button goes after it.
    this.nameEl = byTestId('design-name') || h('span', { testid: 'design-name' })
    this.nameEl.classList.add('be-design-name')
    this.nameEl.title = 'design name (the default application id)'
    const nameGroup = this.nameEl.isConnected && bar.contains(this.nameEl) ? null : group(this.nameEl)
    const saveGroup = group()
    const editGroup = group()
    const viewGroup = group()
    const runGroup = group()
    const fileGroup = group()
    if (nameGroup) bar.append(nameGroup)
    bar.append(saveGroup, editGroup, viewGroup, runGroup, fileGroup)
    const rename = this.button('rename-design', '✎', 'rename the design', () => this.renameDesign(), nameGroup || saveGroup)
    if (!nameGroup && rename.dataset.created) this.nameEl.after(rename)

    const msg = byTestId('save-message') || h('input', { type: 'text', testid: 'save-message', placeholder: 'revision message', class: 'be-save-message', 'aria-label': 'revision message' })
    if (!msg.isConnected) saveGroup.append(msg)
    msg.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') this.save()
    })
    this.messageEl = msg
    const b = {}
    b.save = this.button('save', 'Save', 'save a new revision (Ctrl+S)', () => this.save(), saveGroup)
    if (!this.el.unsaved.closest('.be-toolbar')) saveGroup.append(this.el.unsaved)
    b.undo = this.button('undo', '↶ Undo', 'undo (Ctrl+Z)', () => this.canvas.undo(), editGroup)
    b.redo = this.button('redo', '↷ Redo', 'redo (Ctrl+Shift+Z)', () => this.canvas.redo(), editGroup)
    this.button('zoom-in', '+', 'zoom in (Ctrl+wheel)', () => this.canvas.zoom(0.1), viewGroup)
    this.button('zoom-out', '−', 'zoom out (Ctrl+wheel)', () => this.canvas.zoom(-0.1), viewGroup)
    this.button('fit', 'Fit', 'fit the design in view', () => this.canvas.fit(), viewGroup)
    this.button('layout', 'Layout', 'arrange the nodes left to right', () => {
      this.canvas.layout()
      this.canvas.fit()
    }, viewGroup)
    this.button('compile', 'Compile', 'compile: sub-topologies, internal topics, stores, describe()', () => {
      if (this.compileView.isOpen()) this.compileView.close()
      else this.compileView.open()
    }, runGroup)
    this.button('preview', 'Preview', 'run the design on sample records', () => this.preview.toggle(), runGroup)
    this.deploy = new DeployControls(runGroup, {
      designId: this.id,
      isDirty: () => this.dirty,
      save: () => this.save(),
      status: (m, k) => this.status(m, k),
      onProblems: (ps) => this.problems.set(ps),
    })
    this.button('export-go', 'Export Go', 'download a Go module (.zip: main.go, go.mod, go.sum and Braid\'s runtime) that builds and runs this topology with go build', () => this.exportGo(), fileGroup)
    this.button('download-json', 'Download JSON', 'download the design as JSON', () => this.downloadJSON(), fileGroup)
    let upload = byTestId('upload-json')
    if (!upload) {
      upload = h('input', { type: 'file', accept: '.json,application/json', testid: 'upload-json', class: 'be-file' })
      fileGroup.append(h('label', { class: 'be-file-label', title: 'upload a design JSON as a new design' }, 'Upload JSON', upload))
    }
    upload.addEventListener('change', () => this.uploadJSON(upload))
    this.button('import-describe', 'Import describe', 'import a Kafka Streams Topology.describe() text as a new design', () => this.importDescribe(), fileGroup)
    this.statusEl = h('span', { class: 'be-status', testid: 'status', role: 'status', 'aria-live': 'polite' })
    bar.append(this.statusEl)
    this.buttons = b
  }

  async save(message) {
    if (this.saving) return
    this.saving = true
    const design = this.design()
    const msg = message !== undefined ? message : this.messageEl.value.trim()
    this.status('Saving…')
    try {
      const res = await api('PUT', `/api/designs/${encodeURIComponent(this.id)}`, { design, message: msg })
      this.saved = this.snapshot(design)
      const n = revisionNumber(res && res.revision)
      if (n !== null) {
        this.revision = n
        this.shown = n
      }
      if (message === undefined) this.messageEl.value = ''
      this.updateDirty()
      this.status(n !== null ? `Saved revision ${n}` : 'Saved', 'ok')
      this.revisions.refresh()
    } catch (err) {
      this.status(`Save failed: ${err.message}`, 'error')
      if (err.problems.length) this.problems.set(err.problems)
    } finally {
      this.saving = false
    }
  }

  openRevision(design, n) {
    const why = this.catalog.tooBig(design)
    if (why) {
      this.status(`Revision ${n} cannot be opened: ${why}`, 'error')
      return false
    }
    this.meta.name = design.name || this.meta.name
    this.canvas.load(design, { undoable: true })
    this.shown = n
    this.updateTitle()
    this.revisions.render()
    this.changed.flush()
    this.canvas.fit()
    this.status(`Opened revision ${n}; save to make it the latest`)
    return true
  }

  renameDesign() {
    const group = this.nameEl.parentNode
    if (group.querySelector('input.be-rename')) return
    const input = h('input', { type: 'text', class: 'be-rename', testid: 'design-name-input', value: this.meta.name, 'aria-label': 'design name' })
    this.nameEl.hidden = true
    group.insertBefore(input, this.nameEl)
    input.focus()
    input.select()
    let done = false
    const finish = async (ok) => {
      if (done) return
      done = true
      const name = input.value.trim()
      input.remove()
      this.nameEl.hidden = false
      if (!ok || !name || name === this.meta.name) return
      try {
        const res = await api('POST', `/api/designs/${encodeURIComponent(this.id)}/rename`, { name })
        // The rename is a revision of its own: the saved design has the
        // new name.
        const saved = JSON.parse(this.saved)
        saved.name = name
        this.saved = stableStringify(saved)
        this.meta.name = name
        const n = revisionNumber(res && res.revision)
        if (n !== null) {
          this.revision = n
          this.shown = n
        }
        this.updateTitle()
        this.changed.flush()
        this.revisions.refresh()
        this.status(`Renamed to ${name}`, 'ok')
      } catch (err) {
        this.status(`Rename failed: ${err.message}`, 'error')
      }
    }
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') finish(true)
      if (e.key === 'Escape') finish(false)
    })
    input.addEventListener('blur', () => finish(true))
  }

  selectProblem(p) {
    if (!p.node) {
      if (p.param === 'name') this.renameDesign()
      return
    }
    this.canvas.selectNode(p.node)
    this.properties.show(this.canvas.selected())
    if (p.param && !this.properties.focusParam(p.param)) this.el.properties.scrollTop = 0
  }

  async exportGo() {
    try {
      const res = await request('POST', '/api/export/module', this.design())
      const blob = await res.blob()
      const name = filename(res, 'braid-design.zip')
      download(blob, name)
      this.status(`Exported ${name}: unzip it and run go build in its folder`, 'ok')
    } catch (err) {
      this.status(`Export failed: ${err.message}`, 'error')
      if (err.problems && err.problems.length) this.problems.set(err.problems)
    }
  }

  downloadJSON() {
    const text = JSON.stringify(this.design(), null, 2) + '\n'
    download(new Blob([text], { type: 'application/json' }), `${this.meta.name || this.id}.json`)
  }

  async uploadJSON(input) {
    const file = input.files && input.files[0]
    if (!file) return
    try {
      const text = await file.text()
      let design
      try {
        design = JSON.parse(text)
      } catch (err) {
        throw new Error(`${file.name} is not JSON: ${err.message}`)
      }
      const why = this.catalog.tooBig(design)
      if (why) throw new Error(`${file.name}: ${why}`)
      const res = await api('POST', '/api/designs/import', design)
      const nid = res && res.design && res.design.id
      if (!nid) throw new Error('the server returned no design')
      this.status(`Imported ${file.name}`, 'ok')
      this.navigate(nid)
    } catch (err) {
      this.status(`Upload failed: ${err.message}`, 'error')
    } finally {
      input.value = ''
    }
  }

  importDescribe() {
    let dlg = byTestId('import-describe-dialog')
    if (!dlg) {
      const text = h('textarea', { testid: 'describe-text', rows: '16', spellcheck: 'false', placeholder: 'Topologies:\n   Sub-topology: 0\n    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])\n      --> ...' })
      const name = h('input', { type: 'text', testid: 'describe-name', placeholder: 'name of the new design', 'aria-label': 'name of the new design' })
      const err = h('p', { class: 'be-error', testid: 'describe-error' })
      const notesBox = h('div', { class: 'be-import-notes', testid: 'import-notes' })
      const submit = h('button', { type: 'submit', class: 'be-primary', testid: 'import-describe-submit', text: 'Import as a new design' })
      const cancel = h('button', { type: 'button', testid: 'import-describe-cancel', text: 'Cancel', on: { click: () => dlg.close() } })
      const form = h(
        'form',
        { method: 'dialog' },
        h('h2', { text: 'Import Topology.describe()' }),
        h('p', { class: 'be-hint', text: 'Paste the output of a Kafka Streams Topology.describe(); it becomes a new design.' }),
        text,
        h('label', {}, 'Name ', name),
        err,
        notesBox,
        h('div', { class: 'be-row' }, submit, cancel),
      )
      form.addEventListener('submit', async (e) => {
        e.preventDefault()
        err.textContent = ''
        submit.disabled = true
        try {
          const res = await api('POST', '/api/import/describe', { text: text.value, name: name.value.trim() })
          const created = await api('POST', '/api/designs', res.design)
          const nid = created && created.design && created.design.id
          if (!nid) throw new Error('the server returned no design')
          const notes = (res && res.notes) || []
          if (!notes.length) {
            dlg.close()
            this.navigate(nid)
            return
          }
          // What the text could not tell stays in front of the user until
          // they open the design, where validation points at the nodes.
          clear(notesBox)
          notesBox.append(
            h('p', { text: `Imported as a new design, with ${notes.length} note${notes.length === 1 ? '' : 's'} on what describe() does not say:` }),
            h('ul', {}, ...notes.map((n, i) => h('li', { testid: `import-note-${i}`, text: `node ${n.node} (${n.kind}), ${n.processor}: ${n.message}` }))),
            h('button', { type: 'button', class: 'be-primary', testid: 'import-open', text: 'Open the design', on: { click: () => { dlg.close(); this.navigate(nid) } } }),
          )
          submit.hidden = true
        } catch (ex) {
          err.textContent = ex.message
        } finally {
          submit.disabled = false
        }
      })
      dlg = h('dialog', { class: 'be-dialog', testid: 'import-describe-dialog' }, form)
      document.body.append(dlg)
    }
    dlg.showModal()
    const ta = byTestId('describe-text', dlg)
    if (ta) ta.focus()
  }

  navigate(id) {
    // A new design: nothing of this one is lost by leaving, unless it
    // has unsaved changes, which the browser asks about.
    window.location.assign(`/designs/${encodeURIComponent(id)}`)
  }
}

export { clone, clear }
