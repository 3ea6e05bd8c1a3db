// The printable report of one failover (/deployments/:id/failovers/:fid,
// templates/report.templ): draws the failover's swimlane chart with the
// live page's drawing (swimlanes.js) from the timeline's JSON that the
// page carries (failover-data), and wires the Print button. The body's
// data-report-ready is "true" once the chart is drawn.

import { h } from '../editor/dom.js'
import { drawTimeline, legend } from './swimlanes.js'

function boot() {
  const box = document.querySelector('[data-testid="failover-timeline"]')
  try {
    const tl = JSON.parse(document.getElementById('failover-data').textContent)
    box.replaceChildren(drawTimeline(tl, { width: box.clientWidth }), legend())
  } catch (err) {
    console.error(err)
    box.replaceChildren(h('p', { class: 'rp-error', testid: 'report-error', text: `drawing the timeline: ${err.message}` }))
  }
  const print = document.querySelector('[data-testid="report-print"]')
  if (print) print.addEventListener('click', () => window.print())
  document.body.dataset.reportReady = 'true'
}

boot()
