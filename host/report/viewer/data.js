// ---- data: the URL fragment and the embedded map, decoded into typed arrays (the model, state.M)
const $ = id => document.getElementById(id);
function parseFragment(hash) {
  const out = {};
  for (const part of hash.slice(1).split('&')) {
    const [k, ...v] = part.split('=');
    try { out[k] = decodeURIComponent(v.join('=')); } catch (e) { out[k] = v.join('='); }
  }
  return out;
}
const showMessage = text => { $('msg').textContent = text; $('msg').style.display = 'flex'; };
const fmt = v => Math.round(v).toLocaleString('en-US');

// The data is a JSON script element, not a JS literal, because JSON.parse reads a 25 MB map much faster
// than the JS parser; it is only ever parsed as JSON, never run. The unfilled template holds no data.
function readData() {
  const text = $('orrery-data').textContent.trim();
  return text === '/*ORRERY_' + 'DATA*/null' ? null : JSON.parse(text);   // (split: one token in the page)
}
// Base64 straight into bytes, then typed-array views on that fresh (so aligned) buffer: no per-point objects.
function b64(s) {
  if (typeof s !== 'string' || !s) return new Uint8Array(0);
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(s);
  const bin = atob(s), out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
function typed(bytes, Type, count, what) {
  const need = count * Type.BYTES_PER_ELEMENT;
  if (bytes.length < need) throw new Error(`${what}: ${bytes.length} bytes, expected ${need}`);
  return new Type(bytes.buffer, bytes.byteOffset, count);
}
function parseColour(c) {
  const h = String(c || '').trim().replace(/^#/, ''), v = /^[0-9a-f]{6}$/i.test(h) ? parseInt(h, 16) : 0x999999;
  return [v >> 16 & 255, v >> 8 & 255, v & 255];
}
const DEFAULT_PALETTE = '1f77b4 ff7f0e 2ca02c d62728 9467bd 8c564b e377c2 7f7f7f bcbd22 17becf'.split(' ');

function buildModel(d) {
  const dim = d.dim === 3 ? 3 : 2, n = Math.max(0, d.n | 0);
  const pos = typed(b64(d.coords), Float32Array, n * dim, 'coords');
  const named = Array.isArray(d.groups) ? d.groups.map(String) : [];
  const grp = named.length && d.group_of ? typed(b64(d.group_of), Uint16Array, n, 'group_of') : null;
  // Without per-point groups every point is in slot 0; slot G collects "no group" (65535 or out of range).
  const groups = grp ? named : [named.length === 1 ? named[0] : 'all points'];
  const G = groups.length, counts = new Float64Array(G + 1);
  if (grp) { for (let i = 0; i < n; i++) { const g = grp[i]; counts[g < G ? g : G]++; } } else counts[0] = n;
  const pal = (Array.isArray(d.palette) && d.palette.length ? d.palette : DEFAULT_PALETTE).map(parseColour);
  const colours = groups.map((_, g) => pal[g % pal.length]).concat([[0x99, 0x99, 0x99]]);
  const strings = a => (Array.isArray(a) && a.length >= n ? a : null);
  const m = { d, n, dim, pos, grp, groups, G, counts, colours, names: strings(d.names), text: strings(d.text),
              markers: (Array.isArray(d.markers) ? d.markers : []).filter(k => k && Array.isArray(k.coords)), top: null };
  m.kind = d.marker_kind || (d.top && d.top.kind) || 'marker';
  const t = d.top;
  if (t && t.index && t.prob && (t.m | 0) > 0) {
    const k = t.m | 0;
    m.top = { m: k, index: typed(b64(t.index), Uint16Array, n * k, 'top.index'),
              prob: typed(b64(t.prob), Uint8Array, n * k, 'top.prob'), kind: t.kind || m.kind };
  }
  const lo = [0, 0, 0], hi = [0, 0, 0];
  for (let a = 0; a < dim; a++) {
    let l = Infinity, h = -Infinity;
    for (let j = a; j < pos.length; j += dim) { const v = pos[j]; if (v < l) l = v; if (v > h) h = v; }
    for (const k of m.markers) { const v = +k.coords[a]; if (v < l) l = v; if (v > h) h = v; }
    [lo[a], hi[a]] = l <= h ? [l, h] : [-1, 1];
  }
  m.lo = lo; m.hi = hi;
  m.centre = [0, 1, 2].map(a => (lo[a] + hi[a]) / 2);
  m.radius = Math.max(1e-12, Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]) / 2);
  return m;
}
