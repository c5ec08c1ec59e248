// The page's panel: the title, then per layer a switch, an opacity slider, a preview's date control
// and the legend; then the overlays (where the data is, the tile grid). Titles and dates are set as
// text, never as markup.
import type BaseLayer from 'ol/layer/Base.js';
import type { MapDates } from '../map-page-config.js';
import type { DataLayer } from './layers.js';
import { legendElement } from './legend.js';

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  Object.assign(e, props);
  e.append(...children);
  return e;
}

/** A checkbox that shows and hides a layer. */
function layerSwitch(id: string, label: string, layer: BaseLayer): HTMLElement {
  const box = el('input', { type: 'checkbox', id, checked: layer.getVisible() });
  box.addEventListener('change', () => layer.setVisible(box.checked));
  layer.on('change:visible', () => (box.checked = layer.getVisible()));
  return el('label', { className: 'switch', htmlFor: id }, box, el('span', { textContent: label }));
}

function opacitySlider(id: string, layer: BaseLayer): HTMLElement {
  const value = () => Math.round(layer.getOpacity() * 100);
  const slider = el('input', { type: 'range', id, min: '0', max: '100', step: '5', value: String(value()) });
  const shown = el('output', { textContent: `${value()} %` });
  shown.htmlFor.add(id);
  slider.addEventListener('input', () => layer.setOpacity(Number(slider.value) / 100));
  layer.on('change:opacity', () => {
    slider.value = String(value());
    shown.textContent = `${value()} %`;
  });
  return el('label', { className: 'opacity', htmlFor: id }, el('span', { textContent: 'Opacity' }), slider, shown);
}

/**
 * A preview's dates: a list of its items' days (and "newest") with buttons for the day before and
 * after, or, when the days are not known here (a STAC API collection), a day picker over its extent.
 */
function dateControl(dates: MapDates, current: string, change: (datetime: string) => void): HTMLElement {
  let picker: HTMLSelectElement | HTMLInputElement;
  const wrap = el('div', { className: 'dates' }, el('label', { htmlFor: 'date', textContent: 'Date' }));
  if (dates.values.length) {
    const select = el('select', { id: 'date' });
    const newest = dates.values[dates.values.length - 1];
    select.append(el('option', { value: '', textContent: `newest (${newest})` }));
    for (const d of [...dates.values].reverse()) select.append(el('option', { value: d, textContent: d }));
    // A datetime= given in the URL that is not one of the days (an interval, a date-time) stays choosable.
    if (current && !dates.values.includes(current)) select.append(el('option', { value: current, textContent: current }));
    select.value = current;
    picker = select;
    // Older and newer step through the days (from "newest": the day before the newest).
    const step = (by: number) => () => {
      const i = select.value ? dates.values.indexOf(select.value) : dates.values.length - 1;
      const next = i < 0 ? -1 : i + by;
      if (next < 0 || next >= dates.values.length) return;
      select.value = dates.values[next];
      select.dispatchEvent(new Event('change'));
    };
    const older = el('button', { type: 'button', id: 'date-older', title: 'The date before', textContent: '◀' });
    const newer = el('button', { type: 'button', id: 'date-newer', title: 'The date after', textContent: '▶' });
    older.setAttribute('aria-label', 'The date before');
    newer.setAttribute('aria-label', 'The date after');
    older.addEventListener('click', step(-1));
    newer.addEventListener('click', step(1));
    wrap.append(older, select, newer);
  } else {
    const input = el('input', { type: 'date', id: 'date' });
    if (dates.min) input.min = dates.min;
    if (dates.max) input.max = dates.max;
    input.value = current;
    picker = input;
    wrap.append(input);
  }
  picker.addEventListener('change', () => change(picker.value));
  return wrap;
}

/** Fills the panel; `dateChanged` hears each new `datetime=` of a preview (empty: the newest). */
export function buildPanel(panel: HTMLElement, title: string, layers: DataLayer[], overlays: { id: string; label: string; layer: BaseLayer }[], dateChanged: (layer: DataLayer, datetime: string) => void): void {
  const list = el('div', { id: 'layers' });
  // The panel folds to its title, to see the map beneath it.
  const fold = el('button', { type: 'button', id: 'fold', title: 'Hide the layers', textContent: '−' });
  fold.setAttribute('aria-expanded', 'true');
  fold.setAttribute('aria-controls', 'layers');
  fold.addEventListener('click', () => {
    list.hidden = !list.hidden;
    fold.textContent = list.hidden ? '+' : '−';
    fold.title = list.hidden ? 'Show the layers' : 'Hide the layers';
    fold.setAttribute('aria-expanded', String(!list.hidden));
  });
  const info = el('div', { id: 'info' }, el('h1', { textContent: title }), fold);
  layers.forEach((d, i) => {
    const section = el('section', { className: 'layer' });
    section.dataset.layer = `${d.config.kind}:${d.config.id}`;
    section.append(layerSwitch(`visible-${i}`, d.config.title, d.layer), opacitySlider(`opacity-${i}`, d.layer));
    if (d.config.dates) section.append(dateControl(d.config.dates, d.datetime, (v) => dateChanged(d, v)));
    section.append(legendElement(d.config.legend));
    list.append(section);
  });
  const extras = el('section', { className: 'overlays' });
  for (const o of overlays) extras.append(layerSwitch(o.id, o.label, o.layer));
  list.append(extras);
  panel.append(info, list);
}
