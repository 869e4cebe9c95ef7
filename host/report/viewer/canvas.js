// ---- Canvas 2D drawing, where the browser has no WebGL2 (a remote desktop, a locked-down browser, a VM
// without a GPU). Points are projected on the CPU (3-D rotates as with WebGL2) and written straight into
// an ImageData: squares of the same size and opacity as the WebGL2 points (round from 4 device px up),
// blended over white in draw order, and in 3-D a depth buffer keeps the nearest point on top, as the
// GL depth test does. A frame costs about 90 ns a point (headless Chromium on 2 busy cores: a pan frame
// of 10^6 points took 90 ms, of 300,000 points 39 ms, of 400,000 points 47 ms with spikes past 80 ms), so
// above CANVAS_MAX_POINTS a fixed subsample of that size is drawn, to keep frames near 40 ms, and the
// page says so (docs/cli.md names the number).
const CANVAS_MAX_POINTS = 300000;

// k of the n indices, the same ones at every load: a partial Fisher-Yates shuffle driven by a fixed-seed
// xorshift generator, sorted so that the drawing order (which point lies on top) is the data's order.
function subsampleIndices(n, k, seed = 0x9e3779b9) {
  const perm = new Uint32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  let s = seed >>> 0;
  for (let i = 0; i < k; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    const j = i + Math.floor((s / 4294967296) * (n - i)), t = perm[i];
    perm[i] = perm[j]; perm[j] = t;
  }
  return perm.slice(0, k).sort();
}

// The Canvas 2D renderer of the map in state.M, or null where even a 2-D context is refused.
function createCanvasRenderer(canvas) {
  const M = state.M, ctx = canvas.getContext('2d', { alpha: false });
  if (!ctx) return null;
  const drawn = M.n > CANVAS_MAX_POINTS ? subsampleIndices(M.n, CANVAS_MAX_POINTS) : null;
  const m = drawn ? drawn.length : M.n, { size, alpha } = pointStyle(M.n);
  // Per group slot, how many of the drawn points it holds (the legend still counts all of them).
  const counts = new Float64Array(M.G + 1);
  if (drawn) for (let k = 0; k < m; k++) counts[M.grp ? Math.min(M.grp[drawn[k]], M.G) : 0]++;
  let img = null, depth = null;

  function render() {
    const { dpr } = state, W = img.width, H = img.height, px = img.data, A = affine();
    const [a0, a1, a2, a3, b0, b1, b2, b3, c0, c1, c2, c3] = A, p = M.pos, dim = M.dim, grp = M.grp;
    const vis = state.visRaw, G = M.G, cols = M.colours;
    new Uint32Array(px.buffer).fill(0xffffffff);
    if (depth) depth.fill(Infinity);
    const sz = size * dpr, side = Math.max(1, Math.round(sz)), round = sz >= 4, r2 = (side / 2) * (side / 2);
    // The square's pixel offsets (within the disc when round), worked out once per frame.
    const offs = [];
    for (let dy = 0; dy < side; dy++) for (let dx = 0; dx < side; dx++) {
      const ex = dx + 0.5 - side / 2, ey = dy + 0.5 - side / 2;
      if (!round || ex * ex + ey * ey <= r2) offs.push(dx, dy);
    }
    const no = offs.length, half = side / 2, keep = 1 - alpha;
    for (let k = 0; k < m; k++) {
      const i = drawn ? drawn[k] : k, g = grp ? grp[i] : 0;
      if (!vis[g]) continue;
      const j = i * dim, x = p[j], y = p[j + 1], z = dim === 3 ? p[j + 2] : 0;
      const X = Math.round((a0 * x + a1 * y + a2 * z + a3) * dpr - half);
      const Y = Math.round((b0 * x + b1 * y + b2 * z + b3) * dpr - half);
      if (X >= W || Y >= H || X + side <= 0 || Y + side <= 0) continue;
      const d = c0 * x + c1 * y + c2 * z + c3;
      if (depth && (d < -1 || d > 1)) continue;   // outside the depth range, as GL clips it
      const c = cols[g < G ? g : G], r = c[0] * alpha, gg = c[1] * alpha, b = c[2] * alpha;
      for (let o = 0; o < no; o += 2) {
        const xx = X + offs[o], yy = Y + offs[o + 1];
        if (xx < 0 || yy < 0 || xx >= W || yy >= H) continue;
        const q = yy * W + xx;
        if (depth) { if (d >= depth[q]) continue; depth[q] = d; }
        const e = 4 * q;
        px[e] = r + px[e] * keep; px[e + 1] = gg + px[e + 1] * keep; px[e + 2] = b + px[e + 2] * keep;
      }
    }
    ctx.putImageData(img, 0, 0);
  }
  const note = drawn
    ? `drawing ${fmt(m)} of ${fmt(M.n)} points: WebGL2 is not available. Hover picks among the drawn points; search finds every point.`
    : 'drawn with Canvas 2D: WebGL2 is not available';
  return {
    kind: 'canvas2d', note, drawn, drawnCounts: drawn ? counts : null,
    resize(w, h) { img = ctx.createImageData(w, h); depth = M.dim === 3 ? new Float32Array(w * h) : null; },
    render, sync() {}, coloursChanged() {}, invalidate() {}, warmUp() {}, mode: () => 'canvas2d',
  };
}
