// ---- WebGL2 drawing
// While full redraws are fast (a GPU, or a small map) every frame draws all points onto the canvas.
// Under software GL (SwiftShader) 10^6 points take about a second, far over a 50 ms frame; then a full
// redraw goes into an offscreen image with a margin round the viewport, copied to the canvas. Pan and
// zoom frames only re-place that image (exact for pans, blurred while zooming), a 3-D rotation draws an
// evenly strided subset, and the full image is redrawn when the drag ends or the wheel rests for 200 ms.
const MARGIN = 0.25, SLOW_MS = 40, LOD_MS = 20;

const VS_PTS = `#version 300 es
in vec3 a_pos; in uint a_group; out vec3 v_col;
uniform mat4 u_m; uniform uint u_unl; uniform float u_size; uniform lowp sampler2D u_col;
void main() {
  uint g = min(a_group, u_unl);
  vec4 c = texelFetch(u_col, ivec2(int(g & 255u), int(g >> 8)), 0);
  if (c.a == 0.0) { gl_Position = vec4(2.0, 2.0, 2.0, 1.0); gl_PointSize = 0.0; return; }  // hidden group
  gl_Position = u_m * vec4(a_pos, 1.0);
  gl_PointSize = u_size;
  v_col = c.rgb;
}`;
const FS_PTS = `#version 300 es
precision mediump float;
in vec3 v_col; out vec4 o; uniform float u_alpha; uniform bool u_round;
void main() {
  if (u_round) { vec2 d = gl_PointCoord - 0.5; if (dot(d, d) > 0.25) discard; }
  o = vec4(v_col, u_alpha);
}`;
const VS_BLIT = `#version 300 es
uniform vec4 u_rect; out vec2 v_uv;
void main() { v_uv = vec2(gl_VertexID & 1, gl_VertexID >> 1); gl_Position = vec4(mix(u_rect.xy, u_rect.zw, v_uv), 0.0, 1.0); }`;
const FS_BLIT = `#version 300 es
precision highp float;
in vec2 v_uv; out vec4 o; uniform sampler2D u_tex;
void main() { o = texture(u_tex, v_uv); }`;

// The WebGL2 renderer of the map in state.M, or null where the browser has no WebGL2 (canvas.js then
// draws). What only this renderer uses (programs, buffers, the cached image, the timings) lives here.
function createGLRenderer(canvas) {
  const M = state.M;
  const gl = canvas.getContext('webgl2', { alpha: false, antialias: false, depth: M.dim === 3, preserveDrawingBuffer: true });
  if (!gl) return null;
  let fbo, fboTex, fboDepth, fw = 0, fh = 0, mxd = 0, myd = 0;
  let cache = null, lod = null;
  const fullSamples = [], px1 = new Uint8Array(4), { size: pointSize, alpha: pointAlpha } = pointStyle(M.n);

  function program(vs, fs, names) {
    const p = gl.createProgram();
    for (const [type, src] of [[gl.VERTEX_SHADER, vs], [gl.FRAGMENT_SHADER, fs]]) {
      const s = gl.createShader(type);
      gl.shaderSource(s, src); gl.compileShader(s);
      if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error('shader: ' + gl.getShaderInfoLog(s));
      gl.attachShader(p, s);
    }
    gl.linkProgram(p);
    if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new Error('link: ' + gl.getProgramInfoLog(p));
    const u = { p };
    for (const k of names) u[k] = gl.getUniformLocation(p, k);
    return u;
  }
  gl.clearColor(1, 1, 1, 1);
  const uPts = program(VS_PTS, FS_PTS, ['u_m', 'u_unl', 'u_size', 'u_alpha', 'u_round']);
  const uBlit = program(VS_BLIT, FS_BLIT, ['u_rect']);
  const attrib = (prog, name, data) => {
    const loc = gl.getAttribLocation(prog.p, name);
    gl.bindBuffer(gl.ARRAY_BUFFER, gl.createBuffer());
    gl.bufferData(gl.ARRAY_BUFFER, data, gl.STATIC_DRAW);
    gl.enableVertexAttribArray(loc);
    return loc;
  };
  const vaoPts = gl.createVertexArray();
  gl.bindVertexArray(vaoPts);
  gl.vertexAttribPointer(attrib(uPts, 'a_pos', M.pos), M.dim, gl.FLOAT, false, 0, 0);  // 2-D reads z as 0
  if (M.grp) gl.vertexAttribIPointer(attrib(uPts, 'a_group', M.grp), 1, gl.UNSIGNED_SHORT, 0, 0);
  else gl.vertexAttribI4ui(gl.getAttribLocation(uPts.p, 'a_group'), 0, 0, 0, 0);
  gl.bindVertexArray(null);
  // Colours and visibility live in a 256-wide texture indexed by group: a toggle uploads only this.
  const colTex = gl.createTexture();
  gl.bindTexture(gl.TEXTURE_2D, colTex);
  gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);

  function uploadColours() {
    const rows = Math.ceil((M.G + 1) / 256), px = new Uint8Array(256 * rows * 4);
    M.colours.forEach((c, g) => px.set([c[0], c[1], c[2], state.hidden[g] ? 0 : 255], 4 * g));
    gl.bindTexture(gl.TEXTURE_2D, colTex);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, 256, rows, 0, gl.RGBA, gl.UNSIGNED_BYTE, px);
  }
  // The offscreen image for a canvas of w x h device pixels, with its margin.
  function resize(w, h) {
    const max = Math.min(gl.getParameter(gl.MAX_TEXTURE_SIZE), gl.getParameter(gl.MAX_RENDERBUFFER_SIZE));
    mxd = Math.max(0, Math.min(Math.round(w * MARGIN), Math.floor((max - w) / 2)));
    myd = Math.max(0, Math.min(Math.round(h * MARGIN), Math.floor((max - h) / 2)));
    fw = Math.min(w + 2 * mxd, max); fh = Math.min(h + 2 * myd, max);
    if (fbo) { gl.deleteFramebuffer(fbo); gl.deleteTexture(fboTex); gl.deleteRenderbuffer(fboDepth); }
    gl.bindTexture(gl.TEXTURE_2D, fboTex = gl.createTexture());
    gl.texStorage2D(gl.TEXTURE_2D, 1, gl.RGBA8, fw, fh);
    gl.bindRenderbuffer(gl.RENDERBUFFER, fboDepth = gl.createRenderbuffer());
    gl.renderbufferStorage(gl.RENDERBUFFER, gl.DEPTH_COMPONENT16, fw, fh);
    gl.bindFramebuffer(gl.FRAMEBUFFER, fbo = gl.createFramebuffer());
    gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0, gl.TEXTURE_2D, fboTex, 0);
    gl.framebufferRenderbuffer(gl.FRAMEBUFFER, gl.DEPTH_ATTACHMENT, gl.RENDERBUFFER, fboDepth);
  }
  // Into the cached image (with its margin) or straight onto the canvas; all points or the LOD subset.
  function drawPoints(toCache, useLod, count = M.n) {
    const { view, dpr } = state;
    const w = toCache ? fw : canvas.width, h = toCache ? fh : canvas.height, mx = toCache ? mxd / dpr : 0;
    const A = affine(), my = toCache ? myd / dpr : 0, fx = 2 * dpr / w, fy = 2 * dpr / h;
    gl.bindFramebuffer(gl.FRAMEBUFFER, toCache ? fbo : null);
    gl.viewport(0, 0, w, h);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    if (M.dim === 3) gl.enable(gl.DEPTH_TEST);
    gl.enable(gl.BLEND);
    gl.blendFuncSeparate(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA, gl.ZERO, gl.ONE);  // the image stays opaque
    gl.useProgram(uPts.p);
    gl.uniformMatrix4fv(uPts.u_m, false, [fx * A[0], -fy * A[4], A[8], 0, fx * A[1], -fy * A[5], A[9], 0,
      fx * A[2], -fy * A[6], A[10], 0, fx * (A[3] + mx) - 1, 1 - fy * (A[7] + my), A[11], 1]);
    gl.uniform1ui(uPts.u_unl, M.G);
    gl.uniform1f(uPts.u_size, pointSize * dpr);
    gl.uniform1f(uPts.u_alpha, pointAlpha);
    gl.uniform1i(uPts.u_round, pointSize * dpr >= 4 ? 1 : 0);
    gl.bindTexture(gl.TEXTURE_2D, colTex);   // both programs sample texture unit 0
    gl.bindVertexArray(vaoPts);
    if (useLod) {
      if (!lod) {
        // Every k-th point keeps each group's share and the cloud's shape; k is sized to fit LOD_MS.
        const k = Math.max(2, Math.ceil((fullSamples.length ? Math.min(...fullSamples) : M.n / 1e4) / LOD_MS)), idx = new Uint32Array(Math.ceil(M.n / k));
        for (let i = 0; i < idx.length; i++) idx[i] = i * k;
        gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, gl.createBuffer());
        gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, idx, gl.STATIC_DRAW);
        lod = idx.length;
      }
      gl.drawElements(gl.POINTS, lod, gl.UNSIGNED_INT, 0);
    } else gl.drawArrays(gl.POINTS, 0, count);
    gl.bindVertexArray(null);
    gl.disable(gl.DEPTH_TEST);
    gl.disable(gl.BLEND);
    if (toCache) cache = { ox: view.ox, oy: view.oy, s: view.s, rotV: state.rotV, hidV: state.hidV, sizeV: state.sizeV };
  }
  function blit() {
    // The cache was drawn at (O0, s0); a pan or zoom maps its screen points P to O + (P - O0) * s / s0.
    // A textured quad (NEAREST for pans: an exact copy) measured faster than blitFramebuffer in SwiftShader.
    const { view, dpr, cw, ch } = state;
    const k = view.s / cache.s, mx = mxd / dpr, my = myd / dpr, f = k === 1 ? gl.NEAREST : gl.LINEAR;
    const X = x => (view.ox + (x - cache.ox) * k) / cw * 2 - 1, Y = y => 1 - (view.oy + (y - cache.oy) * k) / ch * 2;
    gl.bindFramebuffer(gl.FRAMEBUFFER, null);
    gl.viewport(0, 0, canvas.width, canvas.height);
    gl.clear(gl.COLOR_BUFFER_BIT);   // past the margin, or zoomed out, the image leaves a border uncovered
    gl.useProgram(uBlit.p);
    gl.uniform4f(uBlit.u_rect, X(-mx), Y(ch + my), X(cw + mx), Y(-my));
    gl.bindTexture(gl.TEXTURE_2D, fboTex);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, f);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, f);
    gl.drawArrays(gl.TRIANGLE_STRIP, 0, 4);
  }
  function sync() { gl.finish(); gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px1); }
  // Slow when the fastest of the timed full redraws exceeds SLOW_MS (a small map under software GL on a
  // busy machine can be); before any timing, guess from the map's size.
  const isSlow = () => (fullSamples.length ? Math.min(...fullSamples) > SLOW_MS : M.n > 2e5);
  // Draws what the current state calls for; `measure` times a full redraw (the first 3 always are).
  function render(measure) {
    const { view, rotV, hidV, sizeV } = state;
    const slow = isSlow(), valid = cache && cache.rotV === rotV && cache.hidV === hidV && cache.sizeV === sizeV;
    const full = toCache => {
      const t0 = performance.now();
      drawPoints(toCache, false);
      if (measure || fullSamples.length < 3) { sync(); fullSamples.push(performance.now() - t0); }
    };
    if (!slow) full(false);
    else if (state.interacting) { if (valid) blit(); else drawPoints(false, true); }
    else {
      if (!(valid && cache.ox === view.ox && cache.oy === view.oy && cache.s === view.s)) full(true);
      blit();
    }
  }
  return {
    kind: 'webgl2', resize, render, sync, coloursChanged: uploadColours,
    invalidate: () => { cache = null; },
    // SwiftShader compiles shaders at the first draw: warm up so that compiling is not timed as drawing.
    warmUp: () => { drawPoints(false, false, 1); sync(); },
    mode: () => (isSlow() ? 'cached-while-interacting' : 'full-redraw'),
  };
}
