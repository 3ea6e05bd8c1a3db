// Fitting a graph to its container, for the editor's canvas and the live
// page's graph.

// MIN_ZOOM is the least zoom of both graphs, by hand or by a fit. A fit
// shows every node down to it; only a design too big to show whole even
// there (hundreds of nodes) overflows its container, which pans (wheel or
// right-drag in the editor, and its minimap; drag on the live page).
export const MIN_ZOOM = 0.2

// fitAll fits graph's content in its container, centred within the
// padding (px: one number for every side, or {top, right, bottom,
// left}), at a zoom from MIN_ZOOM to maxScale: every node shows, as small
// as that takes. Content still too big at MIN_ZOOM is aligned to the top
// left (the sources), on the axis it overflows. The container's data-zoom
// is the zoom.
export function fitAll(graph, container, padding, maxScale) {
  const p = typeof padding === 'number' ? { top: padding, right: padding, bottom: padding, left: padding } : padding
  graph.zoomToFit({ padding: p, maxScale, minScale: MIN_ZOOM })
  const area = graph.getContentArea()
  const s = graph.zoom()
  const { tx, ty } = graph.translate()
  const w = container.clientWidth
  const h = container.clientHeight
  const x = area.width * s + p.left + p.right > w ? p.left - area.x * s : tx
  const y = area.height * s + p.top + p.bottom > h ? p.top - area.y * s : ty
  if (x !== tx || y !== ty) graph.translate(x, y)
  container.dataset.zoom = String(Math.round(s * 1000) / 1000)
}
