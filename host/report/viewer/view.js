// ---- view: the page's elements, the projection of the map onto the screen, pan, zoom and rotation
const canvas = $('gl'), stage = $('stage'), overlay = $('overlay'), tip = $('tip'), ring = $('ring');
// screen (CSS px from the canvas's top left) = O + s * R (p - centre), y flipped; R is the identity in 2-D.
function rotateBy(R, a, b) {
  // Turn about the screen's y axis by a, then its x axis by b: a drag moves the front of the cloud along.
  const ca = Math.cos(a), sa = Math.sin(a), cb = Math.cos(b), sb = Math.sin(b);
  for (let c = 0; c < 3; c++) {
    const x = R[c], y = R[3 + c], z = R[6 + c], x1 = ca * x + sa * z, z1 = ca * z - sa * x;
    R[c] = x1; R[3 + c] = cb * y - sb * z1; R[6 + c] = sb * y + cb * z1;
  }
  // Gram-Schmidt keeps R a rotation after thousands of small turns.
  const unit = v => v.map(x => x / Math.hypot(...v)), r0 = unit(R.slice(0, 3)), r1 = R.slice(3, 6);
  const d = r0[0] * r1[0] + r0[1] * r1[1] + r0[2] * r1[2], r = unit(r1.map((x, c) => x - d * r0[c]));
  R.splice(0, 9, ...r0, ...r, r0[1] * r[2] - r0[2] * r[1], r0[2] * r[0] - r0[0] * r[2], r0[0] * r[1] - r0[1] * r[0]);
}
function resetView() {
  const M = state.M, view = state.view, R = view.R = [1, 0, 0, 0, 1, 0, 0, 0, 1], c = M.centre, p = M.pos;
  if (M.dim === 3) rotateBy(R, 0.6, 0.35);   // a slight turn so that a 3-D cloud reads as 3-D
  state.rotV++;
  // Fit the box of the projected points and markers with equal scales, clear of the legend
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  const add = (x, y, z) => {
    x -= c[0]; y -= c[1]; z -= c[2];
    const u = R[0] * x + R[1] * y + R[2] * z, v = R[3] * x + R[4] * y + R[5] * z;
    if (u < x0) x0 = u; if (u > x1) x1 = u; if (v < y0) y0 = v; if (v > y1) y1 = v;
  };
  if (M.dim === 2) { add(M.lo[0], M.lo[1], 0); add(M.hi[0], M.hi[1], 0); }   // the box already holds markers
  else {
    for (let j = 0; j < p.length; j += 3) add(p[j], p[j + 1], p[j + 2]);
    for (const k of M.markers) add(+k.coords[0], +k.coords[1], +(k.coords[2] || 0));
    if (!(x0 <= x1)) { x0 = y0 = -1; x1 = y1 = 1; }
  }
  // and below the title panel, on a screen wide enough to spare the room
  const { cw, ch } = state, wide = cw > 600, w = cw - (wide ? $('legend').offsetWidth + 20 : 0);
  const top = wide ? $('head').offsetTop + $('head').offsetHeight : 0, h = ch - top;
  view.s = view.fit = 0.9 * Math.min(w / Math.max(x1 - x0, 1e-12), h / Math.max(y1 - y0, 1e-12));
  view.ox = w / 2 - view.s * (x0 + x1) / 2; view.oy = top + h / 2 + view.s * (y0 + y1) / 2;
  schedule();
}
// Rows: screen x, screen y, depth in [-1, 1] (nearer is smaller); each row is a0*x + a1*y + a2*z + a3.
function affine() {
  const M = state.M, view = state.view, R = view.R, c = M.centre, A = new Float64Array(12);
  const k = [view.s, -view.s, -1 / M.radius], off = [view.ox, view.oy, 0];
  for (let r = 0; r < 3; r++) {
    const a0 = k[r] * R[3 * r], a1 = k[r] * R[3 * r + 1], a2 = k[r] * R[3 * r + 2];
    A.set([a0, a1, a2, off[r] - (a0 * c[0] + a1 * c[1] + a2 * c[2])], 4 * r);
  }
  return A;
}
const project = (A, x, y, z) => [A[0] * x + A[1] * y + A[2] * z + A[3], A[4] * x + A[5] * y + A[6] * z + A[7]];
function pointXY(A, i) {
  const M = state.M, p = M.pos, j = i * M.dim;
  return project(A, p[j], p[j + 1], M.dim === 3 ? p[j + 2] : 0);
}
const markerXY = (A, k) => project(A, +k.coords[0], +k.coords[1], state.M.dim === 3 ? +(k.coords[2] || 0) : 0);
function zoomAt(qx, qy, f) {
  const view = state.view;
  f = Math.min(Math.max(view.s * f, view.fit * 1e-3), view.fit * 1e6) / view.s;
  view.ox = qx - (qx - view.ox) * f; view.oy = qy - (qy - view.oy) * f; view.s *= f;
}
// Point size (CSS px) and opacity for a map of n drawn points: dense maps read better with finer points.
const pointStyle = n => ({ size: n <= 2e4 ? 3 : n <= 2e5 ? 2 : 1.5, alpha: n <= 2e4 ? 0.85 : n <= 2e5 ? 0.7 : 0.55 });
