// Bundles the map page (main.ts, OpenLayers and the styles) with esbuild into build/map-page.js
// and build/map-page.css, which the server sends from our own origin (tiles/viewer.ts). Run by
// `npm run build:map` after the type check. The bundle carries OpenLayers' licence, as its BSD
// licence asks of copies in binary form.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const require = createRequire(import.meta.url);
const olLicence = readFileSync(path.join(path.dirname(require.resolve('ol/package.json')), 'LICENSE.md'), 'utf8').trim();
const banner = `/* Xeo map page. It includes OpenLayers (https://openlayers.org/), under this licence:\n\n${olLicence.replaceAll('*/', '* /')}\n*/`;

await build({
  entryPoints: [path.join(here, 'main.ts')],
  outfile: path.join(root, 'build', 'map-page.js'),
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['chrome100', 'firefox100', 'safari15'],
  banner: { js: banner, css: banner },
  legalComments: 'none',
  logLevel: 'warning',
});
