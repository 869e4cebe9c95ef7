// ---- state and start-up
// Everything the page changes after loading, in one object: what the functions above read and write.
const state = {
  timeline: { script_start: performance.now() },   // reported by #bench: where the load time goes
  errors: window.__orreryErrors,
  params: parseFragment(location.hash),
  M: null,                  // the decoded map (data.js), null without data
  renderer: null,           // draws the points: gl.js, or canvas.js without WebGL2
  // screen = O + s * R (p - centre) (view.js); fit is the scale that shows the whole map
  view: { ox: 0, oy: 0, s: 1, fit: 1, R: [1, 0, 0, 0, 1, 0, 0, 0, 1] },
  cw: 1, ch: 1, dpr: 1,     // canvas size in CSS px, exactly its device pixels / dpr
  rotV: 0, hidV: 0, sizeV: 0,   // bumped by changes that invalidate a cached point image
  hidden: null, visRaw: null,   // per group slot / per raw uint16 group value
  interacting: false,       // a drag is in progress or the wheel has not been idle yet
  hoverIdx: -1, markerHover: -1, selected: -1,
  markerEls: [], legendEls: [], tipKey: '',
  lowerNames: null, matches: [], matchQuery: null, matchPos: -1,   // search
  rafId: 0, dirty: false, hoverPending: false, lastMouse: null, exact: null, drag: null, wheelTimer: 0,
  firstFrameMs: null,
};

function resize() {
  const dpr = state.dpr = window.devicePixelRatio || 1;
  const r = stage.getBoundingClientRect(), oldW = state.cw, oldH = state.ch;
  const w = Math.max(1, Math.round(r.width * dpr)), h = Math.max(1, Math.round(r.height * dpr));
  canvas.width = w; canvas.height = h;
  state.cw = w / dpr; state.ch = h / dpr;
  state.view.ox += (state.cw - oldW) / 2; state.view.oy += (state.ch - oldH) / 2;   // keep the map centred in the window
  state.sizeV++;
  if (state.renderer) state.renderer.resize(w, h);
}
// Draws what the current state calls for; `measure` times a full redraw (the first 3 always are).
function renderFrame(measure) {
  state.dirty = false;
  if (!state.M) return;
  if (state.renderer) state.renderer.render(measure);
  updateOverlay();
}

try {
  const data = readData();
  if (data == null) showMessage('no map data');
  else state.M = buildModel(data);
  state.timeline.data_decoded = performance.now();
} catch (e) {
  console.error('orrery: ' + e.message);
  showMessage('could not read the map data: ' + e.message);
}
publishApi();
if (state.M) {
  const M = state.M, d = M.d, params = state.params;
  $('title').textContent = document.title = String(d.title ?? 'orrery map');
  $('sub').textContent = String(d.subtitle ?? '');
  $('help').textContent = (M.dim === 3 ? 'Drag to rotate · shift- or right-drag to pan' : 'Drag to pan') +
    ' · wheel to zoom · click legend to hide (shift-click: solo)';
  state.hidden = new Uint8Array(M.G + 1);
  state.visRaw = new Uint8Array(65536);
  for (const g of String(params.hide || '').split(',')) if (g !== '' && +g >= 0 && +g <= M.G) state.hidden[+g] = 1;
  try {
    state.renderer = createGLRenderer(canvas) || createCanvasRenderer(canvas);
    if (!state.renderer) throw new Error('neither WebGL2 nor Canvas 2D is available in this browser');
  } catch (e) { console.error('orrery: ' + e.message); showMessage(e.message); state.renderer = null; }
  if (state.renderer && state.renderer.note) { $('note').textContent = state.renderer.note; $('note').hidden = false; }
  buildLegend();
  buildMarkers();
  if (d.quality) qualityChart(d.quality);
  resize();
  visibilityChanged();
  resetView();
  initEvents();
  if (state.renderer) state.renderer.warmUp();
  renderFrame(true);
  if (state.renderer) state.renderer.sync();
}
state.firstFrameMs = performance.now();
if ('test' in state.params) {
  let spec = {};
  try { spec = JSON.parse(state.params.test || '{}') || {}; } catch (e) { console.error('orrery: bad #test JSON: ' + e.message); }
  runTest(spec);
} else if ('bench' in state.params) runBench();
else if (state.M && state.params.hover != null && +state.params.hover >= 0 && +state.params.hover < state.M.n) {
  // #hover=i: point i's tooltip shown, as a pointer resting on it would (pictures of the page)
  const [x, y] = screenOf(+state.params.hover);
  hoverAt(x, y);
}
