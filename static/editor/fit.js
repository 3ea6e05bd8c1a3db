// Fitting a graph to its container at a readable zoom, for the editor's
// canvas and the live page's graph.

// MIN_FIT_ZOOM is the least zoom a fit goes to: node text stays readable
// (about 10 px) and a bigger design overflows its container, which pans
// (wheel or right-drag in the editor, and its minimap; drag on the live
// page); Ctrl+wheel still zooms out further by hand.
export const MIN_FIT_ZOOM = 0.85

// fitReadable fits graph's content in its container with the padding, at
// a zoom from MIN_FIT_ZOOM to maxScale; content still too big is aligned
// to the top left, on the axis it overflows.
export function fitReadable(graph, container, padding, maxScale) {
  graph.zoomToFit({ padding, maxScale, minScale: MIN_FIT_ZOOM })
  const area = graph.getContentArea()
  const s = graph.zoom()
  const { tx, ty } = graph.translate()
  const w = container.clientWidth
  const h = container.clientHeight
  const x = area.width * s + 2 * padding > w ? padding - area.x * s : tx
  const y = area.height * s + 2 * padding > h ? padding - area.y * s : ty
  if (x !== tx || y !== ty) graph.translate(x, y)
  container.dataset.zoom = String(Math.round(s * 1000) / 1000)
}

