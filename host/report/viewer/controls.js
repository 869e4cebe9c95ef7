// ---- controls: overlay (markers, highlight ring, tooltip), hover, legend, stats, quality chart,
// search, and the pointer, wheel and key events
// ---- overlay: markers, highlight ring, tooltip
function el(tag, cls, ...kids) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  e.append(...kids);
  return e;
}
function buildMarkers() {
  state.M.markers.forEach((mk, i) => {
    const label = el('div', '', el('span', 'mn', String(mk.name ?? '')));
    const words = Array.isArray(mk.words) ? mk.words : [];
    if (state.M.kind === 'topic' && words.length) label.append(el('div', 'mw', words.slice(0, 4).join(' ')));
    const e = el('div', 'mk', el('i', ''), label);
    e.dataset.i = i;
    overlay.append(e);
    state.markerEls.push(e);
  });
}
function updateOverlay() {
  const A = affine();
  state.M.markers.forEach((mk, i) => {
    const [x, y] = markerXY(A, mk);
    state.markerEls[i].style.transform = `translate(${x.toFixed(1)}px,${y.toFixed(1)}px)`;
  });
  const shown = state.hoverIdx >= 0 ? state.hoverIdx : state.selected;
  ring.style.display = shown >= 0 && isVisible(shown) ? 'block' : 'none';
  if (shown >= 0) {
    const [x, y] = pointXY(A, shown);
    ring.style.transform = `translate(${(x - 8).toFixed(1)}px,${(y - 8).toFixed(1)}px)`;
  }
  placeTip(A);
}
const line = (cls, ...kids) => el('div', cls, ...kids, '\n');  // '\n' keeps textContent readable for tests
const nameOf = i => (state.M.names ? String(state.M.names[i]) : '#' + i);
const slotOf = i => (state.M.grp ? Math.min(state.M.grp[i], state.M.G) : 0);
const isVisible = i => !state.hidden[slotOf(i)];
const groupName = g => (g < state.M.G ? state.M.groups[g] : 'unlabelled');
function swatch(g) { const e = el('span', 'sw'); e.style.background = `rgb(${state.M.colours[g]})`; return e; }
function pointTip(i) {
  const out = [line('tt', nameOf(i))];
  if (state.M.grp) out.push(line('tg', swatch(slotOf(i)), groupName(slotOf(i))));
  if (state.M.top) {
    const { m, index, prob } = state.M.top;
    for (let r = 0; r < m; r++) {
      const k = index[i * m + r], p = prob[i * m + r], mk = state.M.markers[k];
      if (r > 0 && p === 0) break;
      out.push(line('tp', el('span', '', String(mk?.name ?? `${state.M.top.kind} ${k}`)), '  ',
                    el('span', '', (p / 255).toFixed(2))));
    }
  }
  if (state.M.text && state.M.text[i]) {
    const t = String(state.M.text[i]);
    out.push(line('tx', t.length > 400 ? t.slice(0, 400) + '…' : t));
  }
  return out;
}
function markerTip(i) {
  const mk = state.M.markers[i], words = Array.isArray(mk.words) ? mk.words : [];
  const out = [line('tt', String(mk.name ?? ''))];
  if (words.length) out.push(line('tx', words.slice(0, 20).join(', ')));
  return out;
}
function placeTip(A) {
  const key = state.markerHover >= 0 ? 'm' + state.markerHover : state.hoverIdx >= 0 ? 'p' + state.hoverIdx :
              state.selected >= 0 && isVisible(state.selected) ? 'p' + state.selected : '';
  if (key !== state.tipKey) {
    state.tipKey = key;
    tip.replaceChildren(...(!key ? [] : key[0] === 'm' ? markerTip(+key.slice(1)) : pointTip(+key.slice(1))));
    tip.style.display = key ? 'block' : 'none';
  }
  if (!key) return;
  const r = canvas.getBoundingClientRect();
  let [x, y] = key[0] === 'm' ? markerXY(A, state.M.markers[state.markerHover]) : pointXY(A, +key.slice(1));
  x += r.left + 14; y += r.top + 14;
  const w = tip.offsetWidth, h = tip.offsetHeight;
  if (x + w > window.innerWidth - 4) x -= w + 28;
  if (y + h > window.innerHeight - 4) y -= h + 28;
  tip.style.transform = `translate(${Math.max(2, x)}px,${Math.max(2, y)}px)`;
}

// Nearest visible point within 8 CSS px, in screen space. A linear scan with early rejection costs a few
// ms at 10^6 points, runs at most once per animation frame, and needs no index rebuilt as 3-D rotates.
// Where the Canvas 2D fallback draws a subsample, only the drawn points are candidates.
function nearest(clientX, clientY) {
  const r = canvas.getBoundingClientRect(), qx = clientX - r.left, qy = clientY - r.top, rad = 8;
  const [a0, a1, a2, a3, b0, b1, b2, b3] = affine(), p = state.M.pos, dim = state.M.dim, grp = state.M.grp, vis = state.visRaw;
  const drawn = state.renderer ? state.renderer.drawn : null, count = drawn ? drawn.length : state.M.n;
  let best = -1, bd = rad * rad + 1e-9;
  for (let k = 0; k < count; k++) {
    const i = drawn ? drawn[k] : k, j = i * dim, x = p[j], y = p[j + 1], z = dim === 3 ? p[j + 2] : 0;
    const dx = a0 * x + a1 * y + a2 * z + a3 - qx;
    if (dx > rad || dx < -rad) continue;
    const dy = b0 * x + b1 * y + b2 * z + b3 - qy, d = dx * dx + dy * dy;
    if (d < bd && vis[grp ? grp[i] : 0]) { bd = d; best = i; }
  }
  return best;
}

// ---- legend, stats, quality chart
function buildLegend() {
  $('legend').hidden = false;
  const cb = String(state.M.d.colour_by || 'group');
  $('lhead').textContent = cb.charAt(0).toUpperCase() + cb.slice(1);
  for (let g = 0; g <= state.M.G; g++) {
    if (g === state.M.G && !state.M.counts[g]) continue;  // "unlabelled" only when some point has no group
    const e = el('div', 'li', swatch(g), el('span', 'ln', groupName(g)), el('span', 'lc', fmt(state.M.counts[g])));
    e.dataset.g = g;
    $('items').append(state.legendEls[g] = e);
  }
  $('items').addEventListener('click', e => {
    const item = e.target.closest('.li');
    if (!item) return;
    const g = +item.dataset.g;
    if (e.shiftKey) setHidden(s => s !== g); else toggleGroup(g);
  });
  $('all').onclick = () => setHidden(() => false);
  $('none').onclick = () => setHidden(() => true);
}
function setHidden(fn) {
  for (let g = 0; g <= state.M.G; g++) state.hidden[g] = fn(g) ? 1 : 0;
  visibilityChanged();
}
function toggleGroup(g) {
  g = Number(g);
  if (!(g >= 0 && g <= state.M.G)) { console.error('orrery: no group ' + g); return; }
  state.hidden[g] ^= 1;
  visibilityChanged();
}
function visibilityChanged() {
  for (let v = 0; v < 65536; v++) state.visRaw[v] = state.hidden[Math.min(v, state.M.G)] ? 0 : 1;
  if (state.renderer) state.renderer.coloursChanged();
  state.hidV++;
  state.legendEls.forEach((e, g) => e.classList.toggle('off', !!state.hidden[g]));
  const d = drawnCount(), method = state.M.d.method ? ' · ' + String(state.M.d.method).toUpperCase() : '';
  $('stats').textContent = `${fmt(state.M.n)} points · ${state.M.dim}-D${method}` + (d < state.M.n ? ` · showing ${fmt(d)}` : '');
  schedule();
}
// Points drawn: those of the shown groups, counted among the fallback's subsample where it draws one.
function drawnCount() {
  const counts = (state.renderer && state.renderer.drawnCounts) || state.M.counts;
  let s = 0;
  for (let g = 0; g <= state.M.G; g++) if (!state.hidden[g]) s += counts[g];
  return s;
}
function qualityChart(q) {
  const ks = (Array.isArray(q.k) ? q.k : []).map(Number);
  const series = [['trustworthiness', '#1f77b4'], ['continuity', '#d62728'], ['lcmc', '#2ca02c', 'LCMC']]
    .filter(([key]) => Array.isArray(q[key]));
  const vals = series.flatMap(([key]) => q[key].slice(0, ks.length)).filter(Number.isFinite);
  if (!vals.length) return;
  const lo = Math.max(0, Math.floor(Math.min(...vals) * 10 - 1e-9) / 10);
  const hi = Math.max(lo + 0.1, Math.min(1, Math.ceil(Math.max(...vals) * 10 + 1e-9) / 10));
  const W = 290, H = 165, L = 36, R = 280, T = 8, B = 133, kmin = Math.min(...ks), kmax = Math.max(...ks);
  const logx = kmin > 0 && kmax / kmin >= 8, fx = logx ? Math.log : v => v, x0 = fx(kmin), x1 = Math.max(fx(kmax), x0 + 1e-9);
  const X = k => (L + (fx(k) - x0) / (x1 - x0) * (R - L)).toFixed(1), Y = v => (T + (hi - v) / (hi - lo) * (B - T)).toFixed(1);
  // Only numbers and fixed words go into this markup, so building it as text is safe.
  let svg = `<svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`;
  const step = hi - lo > 0.5 ? 0.2 : hi - lo > 0.25 ? 0.1 : 0.05;
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + 1e-9; v += step)
    svg += `<line x1="${L}" x2="${R}" y1="${Y(v)}" y2="${Y(v)}" stroke="#eee"/><text x="${L - 4}" y="${+Y(v) + 3}" text-anchor="end">${v.toFixed(2)}</text>`;
  const every = Math.ceil(ks.length / 8);
  ks.forEach((k, i) => {
    if (i % every === 0) svg += `<line x1="${X(k)}" x2="${X(k)}" y1="${B}" y2="${B + 4}" stroke="#888"/><text x="${X(k)}" y="${B + 14}" text-anchor="middle">${k}</text>`;
  });
  svg += `<path d="M${L},${T}V${B}H${R}" fill="none" stroke="#888"/><text x="${(L + R) / 2}" y="${H - 4}" text-anchor="middle">K (neighbors)${logx ? ', log scale' : ''}</text>`;
  let legend = '';
  for (const [key, colour, label = key] of series) {
    const pts = ks.map((k, i) => [k, Number(q[key][i])]).filter(([, v]) => Number.isFinite(v));
    svg += `<polyline points="${pts.map(([k, v]) => X(k) + ',' + Y(v)).join(' ')}" fill="none" stroke="${colour}" stroke-width="1.8"/>`;
    for (const [k, v] of pts) svg += `<circle cx="${X(k)}" cy="${Y(v)}" r="2.6" fill="${colour}"><title>${label}, K=${k}: ${v.toFixed(4)}</title></circle>`;
    legend += `<span style="--c:${colour}">${label}</span>`;
  }
  $('quality').insertAdjacentHTML('beforeend', svg + `</svg><div class="ql">${legend}</div>`);
  $('quality').hidden = false;
}

// ---- search: every point's name (or #index without names)
function search(text, next) {
  if (text !== state.matchQuery) {
    const q = text.trim().toLowerCase();
    state.matches = []; state.matchQuery = text; state.matchPos = -1;
    if (q && state.M.names && !state.lowerNames) state.lowerNames = state.M.names.map(s => String(s).toLowerCase());
    if (q) for (let i = 0; i < state.M.n; i++) if ((state.lowerNames ? state.lowerNames[i] : '#' + i).includes(q)) state.matches.push(i);
  }
  if (!state.matches.length) {
    $('qn').textContent = text.trim() ? 'no match' : '';
    state.selected = -1; schedule();
    return 0;
  }
  state.matchPos = next ? (state.matchPos + 1) % state.matches.length : 0;
  const i = state.selected = state.matches[state.matchPos], g = slotOf(i);
  if (state.hidden[g]) { state.hidden[g] = 0; visibilityChanged(); }   // a found point must be visible to be shown
  const [x, y] = pointXY(affine(), i);
  state.view.ox += state.cw / 2 - x; state.view.oy += state.ch / 2 - y;
  state.hoverIdx = state.markerHover = -1;
  schedule();
  $('qn').textContent = `${fmt(state.matchPos + 1)} of ${fmt(state.matches.length)}`;
  return state.matches.length;
}

// ---- events and frame scheduling
function schedule() { state.dirty = true; if (!state.rafId) state.rafId = requestAnimationFrame(tick); }
function scheduleHover() { state.hoverPending = true; if (!state.rafId) state.rafId = requestAnimationFrame(tick); }
function tick() {
  state.rafId = 0;
  if (state.hoverPending) processHover();
  if (state.dirty) renderFrame(false);
}
function processHover() {
  state.hoverPending = false;
  const ev = state.lastMouse;
  state.markerHover = state.hoverIdx = -1;
  if (ev && !state.drag) {
    const mk = ev.target.closest?.('.mk');
    if (mk) state.markerHover = +mk.dataset.i; else state.hoverIdx = nearest(ev.x, ev.y);
  }
  updateOverlay();
}
function initEvents() {
  stage.addEventListener('mousedown', e => {
    if (e.button !== 0 && e.button !== 2) return;
    state.drag = { x: e.clientX, y: e.clientY, rotate: state.M.dim === 3 && e.button === 0 && !e.shiftKey, moved: false };
    state.interacting = true;
    e.preventDefault();
  });
  window.addEventListener('mousemove', e => {
    if (!state.drag) return;
    const dx = e.clientX - state.drag.x, dy = e.clientY - state.drag.y;
    if (!dx && !dy) return;
    state.drag.x = e.clientX; state.drag.y = e.clientY; state.drag.moved = true;
    if (state.drag.rotate) { rotateBy(state.view.R, dx * 0.008, dy * 0.008); state.rotV++; } else { state.view.ox += dx; state.view.oy += dy; }
    state.hoverIdx = state.markerHover = -1;
    schedule();
  });
  window.addEventListener('mouseup', () => {
    if (!state.drag) return;
    if (!state.drag.moved) state.selected = -1;   // a plain click on the map clears the search highlight
    state.drag = null; state.interacting = false;
    schedule(); scheduleHover();
  });
  stage.addEventListener('mousemove', e => {
    // MouseEvent rounds clientX/Y to whole pixels; hoverAt() keeps the sub-pixel position it asked for.
    const ok = state.exact && Math.abs(state.exact[0] - e.clientX) < 1 && Math.abs(state.exact[1] - e.clientY) < 1;
    state.lastMouse = { x: ok ? state.exact[0] : e.clientX, y: ok ? state.exact[1] : e.clientY, target: e.target };
    state.exact = null;
    scheduleHover();
  });
  stage.addEventListener('mouseleave', () => { state.lastMouse = null; scheduleHover(); });
  stage.addEventListener('contextmenu', e => e.preventDefault());
  stage.addEventListener('wheel', e => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect(), unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? state.ch : 1;
    zoomAt(e.clientX - r.left, e.clientY - r.top, Math.exp(-e.deltaY * unit * 0.0015));
    state.interacting = true;
    clearTimeout(state.wheelTimer);
    state.wheelTimer = setTimeout(() => { if (!state.drag) state.interacting = false; schedule(); }, 200);
    state.lastMouse = { x: e.clientX, y: e.clientY, target: e.target };
    schedule(); scheduleHover();
  }, { passive: false });
  window.addEventListener('resize', () => { resize(); schedule(); });
  $('reset').onclick = resetView;
  const q = $('q');
  q.addEventListener('keydown', e => {
    if (e.key === 'Enter') search(q.value, q.value === state.matchQuery);
    if (e.key === 'Escape') { q.value = ''; search('', false); }
  });
  window.addEventListener('keydown', e => {
    if (e.target === q) return;
    if (e.key === 'r' || e.key === 'R') resetView();
    if (e.key === 'Escape') { state.selected = -1; schedule(); }
  });
}
