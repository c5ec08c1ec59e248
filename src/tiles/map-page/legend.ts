// A layer's legend: its colour ramp (the 256 colours the server draws one band with) with what its
// ends stand for, and the legend in words. Everything is set as text or pixels, never as markup.
import type { MapLegend } from '../map-page-config.js';

/** The ramp as a 256 × 1 canvas (stretched by CSS), one pixel per colour of the table. */
function rampCanvas(colors: string): HTMLCanvasElement {
  const n = Math.floor(colors.length / 6);
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(1, n);
  canvas.height = 1;
  const ctx = canvas.getContext('2d');
  if (ctx && n > 0) {
    const img = ctx.createImageData(n, 1);
    for (let i = 0; i < n; i++) {
      img.data[4 * i] = parseInt(colors.slice(6 * i, 6 * i + 2), 16);
      img.data[4 * i + 1] = parseInt(colors.slice(6 * i + 2, 6 * i + 4), 16);
      img.data[4 * i + 2] = parseInt(colors.slice(6 * i + 4, 6 * i + 6), 16);
      img.data[4 * i + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
  }
  canvas.className = 'ramp';
  return canvas;
}

export function legendElement(legend: MapLegend): HTMLElement {
  const box = document.createElement('div');
  box.className = 'legend';
  if (legend.ramp) {
    const ramp = rampCanvas(legend.ramp.colors);
    ramp.title = `${legend.ramp.name} colours`;
    ramp.setAttribute('role', 'img');
    ramp.setAttribute('aria-label', `${legend.ramp.name} colours from ${legend.ramp.low} to ${legend.ramp.high}`);
    const ends = document.createElement('div');
    ends.className = 'ends';
    const low = document.createElement('span');
    low.textContent = legend.ramp.low;
    const high = document.createElement('span');
    high.textContent = legend.ramp.high;
    ends.append(low, high);
    box.append(ramp, ends);
  }
  if (legend.classes) {
    // A categorical map: one swatch per class with its value.
    const list = document.createElement('ul');
    list.className = 'classes';
    for (const c of legend.classes) {
      const item = document.createElement('li');
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = `#${/^[0-9a-f]{6}$/i.test(c.color) ? c.color : '000000'}`;
      const label = document.createElement('span');
      label.textContent = c.value;
      item.append(swatch, label);
      list.append(item);
    }
    box.append(list);
  }
  const text = document.createElement('p');
  text.textContent = legend.text;
  box.append(text);
  return box;
}
