// System tools some tests use as references (GDAL). Without the tool such a test is skipped and says
// why, except under CI=true, where .ci/run installs the tools and a missing one is a failure.
import { spawnSync } from 'node:child_process';
import { describe, it } from 'vitest';

function has(cmd: string, args: string[]): boolean {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return r.status === 0;
}

export const hasGdal = has('gdalinfo', ['--version']);

/** Debian's Chromium, driven by playwright-core (which never downloads a browser of its own). */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = has(CHROMIUM, ['--version']);
/** Flags for a headless Chromium on a machine with a closed network (no background connections). */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** GDAL's COG layout check, from Debian's python3-gdal (run with Debian's python, not a pyenv one). */
export const COG_VALIDATOR = ['/usr/bin/python3', ['-m', 'osgeo_utils.samples.validate_cloud_optimized_geotiff']] as const;
export const hasCogValidator = hasGdal && has('/usr/bin/python3', ['-c', 'import osgeo_utils.samples.validate_cloud_optimized_geotiff']);

/** Debian's python3 with xarray and netCDF4 (readers of our netCDF files that we did not write). */
export const DEBIAN_PYTHON = '/usr/bin/python3';
export const hasXarray = has(DEBIAN_PYTHON, ['-c', 'import xarray, netCDF4']);
/** Debian's python3-onnx (with numpy): builds the ONNX models of the predict_onnx tests. */
export const hasPythonOnnx = has(DEBIAN_PYTHON, ['-c', 'import onnx, numpy']);

/** `describe` when the tool is present; a skip outside CI; a failing test under CI. */
export function describeWithTool(present: boolean, tool: string, name: string, fn: () => void): void {
  if (present) describe(name, fn);
  else if (process.env.CI === 'true') {
    describe(name, () => {
      it(`needs ${tool}, which .ci/run should have installed`, () => {
        throw new Error(`${tool} is missing under CI`);
      });
    });
  } else describe.skip(`${name} (skipped: ${tool} is not installed)`, fn);
}

/** One test of a block that runs without the tool: `it` when present; a skip outside CI; a failure under CI. */
export function itWithTool(present: boolean, tool: string, name: string, fn: () => void | Promise<void>): void {
  if (present) it(name, fn);
  else if (process.env.CI === 'true') {
    it(`${name} (needs ${tool}, which .ci/run should have installed)`, () => {
      throw new Error(`${tool} is missing under CI`);
    });
  } else it.skip(`${name} (skipped: ${tool} is not installed)`, fn);
}

/** Runs a command and returns stdout; throws with stderr on failure. */
export function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/**
 * What xarray.open_dataset (Debian's python, netCDF4 underneath) makes of netCDF files: per file,
 * the temporal coordinate as text, and each data variable with its dimensions and values (NaN as null).
 */
export function xarrayRead(files: string[]): { t: string[] | null; vars: Record<string, { dims: string[]; values: any }> }[] {
  const code = `
import json, sys, math, xarray
def plain(v):
    return [plain(x) for x in v] if isinstance(v, list) else (None if isinstance(v, float) and math.isnan(v) else v)
out = []
for f in sys.argv[1:]:
    ds = xarray.open_dataset(f)
    out.append({'t': [str(x) for x in ds['t'].values] if 't' in ds.coords else None,
                'vars': {k: {'dims': list(v.dims), 'values': plain(v.values.tolist())} for k, v in ds.data_vars.items() if v.dims}})
print(json.dumps(out))`;
  return JSON.parse(run(DEBIAN_PYTHON, ['-c', code, ...files]));
}
