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

/** Runs a command and returns stdout; throws with stderr on failure. */
export function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}
