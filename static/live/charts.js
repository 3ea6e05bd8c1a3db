// Throughput and consumer lag of the deployment over the last minutes
// (the snapshot's throughput series, one point a second), drawn with the
// vendored uPlot (window.uPlot). Without it the charts say so and the page
// works on.
//
// The x axis spans the series, and at least the minute up to its end:
// the replayed moment, or the newest point (now without one), labelled
// in clock times (UTC, as the rest of the page).
//
// Test ids: chart-throughput, chart-lag (data-points: the points drawn;
// data-x-from, data-x-to: the x axis's span, unix ms; data-x-labels: its
// labels, joined by "|").

import { h } from '../editor/dom.js'
import { rate, count, clock } from './format.js'

const HEIGHT = 150

// xRange is the x range of a chart's points (seconds): from the first
// point, or a minute before the end when that is later, to the end.
// It reads the points themselves, not the min and max uPlot passes: for a
// single point on a time scale uPlot passes a max 86400/ms after it (ms
// is 1e-3 for seconds: 86.4 million seconds, 2.7 years).
export function xRange(xs, end) {
  const last = xs.length ? xs[xs.length - 1] : Date.now() / 1000
  const to = end ?? last
  const from = xs.length ? Math.min(xs[0], to - 60) : to - 60
  return [from, to]
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
    this.end = null // the replayed moment (seconds), null when live
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
      scales: { x: { time: true, range: (u) => xRange(u.data[0], this.end) }, y: { range: (u, min, max) => [0, Math.max(5, max * 1.1)] } },
      axes: [
        {
          stroke: '#868e96',
          grid: { stroke: '#f1f3f5' },
          ticks: { stroke: '#dee2e6' },
          values: (u, splits) => clockLabels(box, splits),
        },
        { stroke: '#868e96', grid: { stroke: '#f1f3f5' }, ticks: { stroke: '#dee2e6' }, size: 50, incrs: STEPS, values: (u, vals) => vals.map(fmt) },
      ],
      series: [{}, { label, stroke, fill, width: 1.5, points: { show: false } }],
      hooks: { draw: [(u) => drawn(box, u)] },
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
    this.end = dep && typeof dep.replayedAt === 'number' ? dep.replayedAt / 1000 : null
    const key = `${series.length}:${last ? last.t : ''}:${this.end}`
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

// clockLabels labels the x axis's ticks (seconds; null for a tick
// without a label) with clock times, and tells them on the chart's box.
function clockLabels(box, splits) {
  const labels = splits.map((s) => (s == null ? null : clock(s * 1000, { millis: false })))
  box.dataset.xLabels = labels.filter((l) => l != null).join('|')
  return labels
}

// drawn tells the x axis's span on the chart's box.
function drawn(box, u) {
  box.dataset.xFrom = String(Math.round(u.scales.x.min * 1000))
  box.dataset.xTo = String(Math.round(u.scales.x.max * 1000))
}
