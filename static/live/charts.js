// Throughput and consumer lag of the deployment over the last minutes
// (the snapshot's throughput series, one point a second), drawn with the
// vendored uPlot (window.uPlot). Without it the charts say so and the page
// works on.
//
// Test ids: chart-throughput, chart-lag (data-points: the points drawn).

import { h } from '../editor/dom.js'
import { rate, count } from './format.js'

const HEIGHT = 150

// lastMinuteAtLeast is the x range: the points' own, or the minute up to
// the newest point when there is at most one second of them.
function lastMinuteAtLeast(u, min, max) {
  if (max == null) max = Date.now() / 1000
  if (min == null || max - min < 1) return [max - 60, max]
  return [min, max]
}
// Whole-number steps of the y axes.
const STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6]

export class Charts {
  constructor(root) {
    this.root = root
    this.boxes = {
      throughput: h('div', { class: 'lv-chart', testid: 'chart-throughput' }),
      lag: h('div', { class: 'lv-chart', testid: 'chart-lag' }),
    }
    this.now = {
      throughput: h('span', { class: 'lv-chart-now' }),
      lag: h('span', { class: 'lv-chart-now' }),
    }
    root.append(
      h('div', { class: 'lv-chart-title' }, 'Records/s processed ', this.now.throughput),
      this.boxes.throughput,
      h('div', { class: 'lv-chart-title' }, 'Consumer lag (records) ', this.now.lag),
      this.boxes.lag,
    )
    this.plots = null
    this.lastKey = ''
    if (!window.uPlot) {
      for (const b of Object.values(this.boxes)) b.append(h('p', { class: 'lv-muted', text: 'the chart library (uPlot) did not load' }))
      return
    }
    if (window.ResizeObserver) {
      new ResizeObserver(() => this.resize()).observe(root)
    }
  }

  width() {
    return Math.max(240, Math.floor(this.root.clientWidth - 8))
  }

  make(box, label, stroke, fill, fmt) {
    const opts = {
      width: this.width(),
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      // With one point (a page opened just after the server started)
      // uPlot's own padding would span years.
      scales: { x: { time: true, range: lastMinuteAtLeast }, y: { range: (u, min, max) => [0, Math.max(5, max * 1.1)] } },
      axes: [
        { stroke: '#868e96', grid: { stroke: '#f1f3f5' }, ticks: { stroke: '#dee2e6' } },
        { stroke: '#868e96', grid: { stroke: '#f1f3f5' }, ticks: { stroke: '#dee2e6' }, size: 50, incrs: STEPS, values: (u, vals) => vals.map(fmt) },
      ],
      series: [{}, { label, stroke, fill, width: 1.5, points: { show: false } }],
    }
    return new window.uPlot(opts, [[], []], box)
  }

  resize() {
    if (!this.plots) return
    const w = this.width()
    for (const p of Object.values(this.plots)) if (p.width !== w) p.setSize({ width: w, height: HEIGHT })
  }

  update(dep) {
    const series = (dep && dep.throughput) || []
    const last = series[series.length - 1]
    this.now.throughput.textContent = last ? `now ${rate(last.rps)}/s` : ''
    this.now.lag.textContent = last ? `now ${count(last.lag)}` : ''
    if (!window.uPlot) return
    const key = `${series.length}:${last ? last.t : ''}`
    if (key === this.lastKey) return
    this.lastKey = key
    if (!this.plots) {
      this.plots = {
        throughput: this.make(this.boxes.throughput, 'records/s', '#364fc7', 'rgba(54,79,199,0.12)', rate),
        lag: this.make(this.boxes.lag, 'lag', '#e8590c', 'rgba(232,89,12,0.12)', count),
      }
    }
    const xs = series.map((p) => p.t / 1000)
    this.plots.throughput.setData([xs, series.map((p) => p.rps)])
    this.plots.lag.setData([xs, series.map((p) => p.lag)])
    this.boxes.throughput.dataset.points = String(series.length)
    this.boxes.lag.dataset.points = String(series.length)
  }
}
