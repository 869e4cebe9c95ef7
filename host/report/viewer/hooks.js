// ---- API and the fragment protocol (#test=..., #bench, #hide=..., #hover=...)
function screenOf(i) {
  const r = canvas.getBoundingClientRect(), [x, y] = pointXY(affine(), i);
  return [r.left + x, r.top + y];
}
function fire(type, x, y, extra) {
  const init = { clientX: x, clientY: y, bubbles: true, cancelable: true, view: window, button: 0, buttons: 1, ...extra };
  canvas.dispatchEvent(type === 'wheel' ? new WheelEvent(type, init) : new MouseEvent(type, init));
}
function hoverAt(x, y) {
  state.exact = [x, y];
  fire('mousemove', x, y, { buttons: 0 });
  processHover();   // now rather than at the next animation frame, which headless Chromium may not run
  return Promise.resolve(tip.style.display === 'none' ? '' : tip.textContent);
}
// One synchronous frame, finished (on the GPU too): `full` forces a full redraw (unless interacting);
// otherwise it is the frame the user would see after the last input event.
function frame(full) {
  const t0 = performance.now(), r = state.renderer;
  if (full && !state.interacting && r) r.invalidate();
  renderFrame(full && !state.interacting);
  if (r) r.sync();
  return performance.now() - t0;
}
function publishApi() {
  const M = state.M;
  window.orrery = {
    drawnCount: () => (M ? drawnCount() : 0), screenOf, hoverAt, toggleGroup: g => M && toggleGroup(g),
    search: t => (M ? search(String(t), false) : 0), frame: () => (M ? frame(true) : 0),
  };
}

const median = a => [...a].sort((x, y) => x - y)[a.length >> 1];
const r2 = v => Math.round(v * 100) / 100;
function writeResult(result) {
  result.errors = state.errors.slice();
  const pre = el('pre', '', JSON.stringify(result));
  pre.id = 'orrery-result';
  document.body.append(pre);
  document.title = 'orrery-done';
}
async function runTest(spec) {
  const M = state.M, r = state.renderer;
  const result = { n: M ? M.n : 0, drawn: M ? drawnCount() : 0, renderer: r ? r.kind : null };
  if (!$('note').hidden) result.note = $('note').textContent;
  if (M && spec.hover != null) {
    const i = Number(spec.hover), [x, y] = screenOf(i), tooltip = await hoverAt(x, y);
    result.hover = { index: i, x, y, tooltip, found: state.hoverIdx };
  }
  if (M && spec.toggle != null) {
    toggleGroup(spec.toggle);
    frame(true);
    result.after_toggle = { group: Number(spec.toggle), drawn: drawnCount() };
  }
  result.first_frame_ms = r2(state.firstFrameMs);
  writeResult(result);
}
function runBench() {
  const M = state.M, result = { n: M ? M.n : 0, first_frame_ms: r2(state.firstFrameMs) };
  for (const k in state.timeline) result[k + '_ms'] = r2(state.timeline[k]);
  if (M && state.renderer) {
    const r = canvas.getBoundingClientRect(), pan = [], zoom = [];
    let x = r.left + r.width / 2, y = r.top + r.height / 2;
    fire('mousedown', x, y);
    for (let i = 0; i < 30; i++) { x += 3; y += 2; fire('mousemove', x, y); pan.push(frame(false)); }
    fire('mouseup', x, y, { buttons: 0 });
    result.pan_settle_ms = r2(frame(false));   // the full redraw once the drag has ended
    for (let i = 0; i < 10; i++) { fire('wheel', x, y, { buttons: 0, deltaY: i < 5 ? -100 : 100 }); zoom.push(frame(false)); }
    clearTimeout(state.wheelTimer); state.interacting = false;
    result.zoom_settle_ms = r2(frame(false));
    Object.assign(result, {
      full_redraw_ms: r2(frame(true)),
      pan_ms: pan.map(r2), pan_median_ms: r2(median(pan)), pan_max_ms: r2(Math.max(...pan)),
      zoom_ms: zoom.map(r2), zoom_median_ms: r2(median(zoom)), zoom_max_ms: r2(Math.max(...zoom)),
      mode: state.renderer.mode(),
    });
  }
  writeResult(result);
}
