// The configuration page cannot drift from the code: its table is the one `xeo settings` prints from
// the list loadConfig reads (src/core/settings.ts), every XEO_ variable the code reads is in that
// list, and every link of the table points at a page of docs/.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, xeo, tempDir, removeDir } from './helpers.js';
import { SETTINGS } from '../src/core/settings.js';
import { loadConfig } from '../src/core/config.js';

const page = () => readFileSync(path.join(ROOT, 'docs/configuration.md'), 'utf8');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

describe('configuration documentation', () => {
  it('docs/configuration.md holds exactly the table `xeo settings` generates', () => {
    const dir = tempDir();
    try {
      const r = xeo(['settings'], { dataDir: dir });
      expect(r.status, r.stderr).toBe(0);
      const m = /<!-- settings:begin -->\n([\s\S]*?)<!-- settings:end -->/.exec(page());
      expect(m, 'the settings section of docs/configuration.md').not.toBeNull();
      expect(m![1], 'run npm run docs:config').toBe(r.stdout);
      expect(r.stdout.trim().split('\n')).toHaveLength(Object.keys(SETTINGS).length + 2);
    } finally {
      removeDir(dir);
    }
  });

  it('every XEO_ variable the code reads is a listed setting', () => {
    const listed = new Set(Object.values(SETTINGS).map((s) => s.name));
    const read = new Set<string>();
    for (const f of sources(path.join(ROOT, 'src'))) {
      for (const m of readFileSync(f, 'utf8').matchAll(/env(?:\.|\[')(XEO_[A-Z0-9_]+)/g)) read.add(m[1]);
    }
    expect(read.size).toBeGreaterThan(0);
    expect([...read].filter((n) => !listed.has(n))).toEqual([]);
  });

  it('the defaults shown are the defaults loadConfig uses', () => {
    const c = loadConfig({});
    const shown = (name: string) => Object.values(SETTINGS).find((s) => s.name === name)!.shown;
    expect(shown('XEO_PORT')).toBe(`\`${c.port}\``);
    expect(shown('XEO_TILE_CACHE_BYTES')).toBe(`\`${c.tileCacheBytes}\``);
    expect(shown('XEO_DRAIN_SECONDS')).toBe(`\`${c.drainSeconds}\``);
    expect(shown('XEO_LOG_FORMAT')).toBe(`\`${c.log.format}\``);
    expect(shown('XEO_DATABASE_TIMEOUT')).toBe(`\`${c.database.timeoutMs / 1000}\``);
    expect(c.metricsPort).toBeNull();
    expect(() => loadConfig({ XEO_LOG_FORMAT: 'xml' })).toThrow(/XEO_LOG_FORMAT must be one of text, json/);
    expect(() => loadConfig({ XEO_DRAIN_SECONDS: '-1' })).toThrow(/XEO_DRAIN_SECONDS must be an integer >= 0/);
  });

  it('links between README and the pages of docs/ resolve, headings included', () => {
    const files = [
      'README.md',
      ...readdirSync(path.join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    // GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens.
    const slug = (h: string) =>
      h
        .trim()
        .toLowerCase()
        .replace(/[`*_]/g, '')
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-');
    const headings = new Map(
      files.map((f) => [
        f,
        new Set(
          [
            ...readFileSync(path.join(ROOT, f), 'utf8')
              .replace(/```[\s\S]*?```/g, '')
              .matchAll(/^#+ (.+)$/gm),
          ].map((m) => slug(m[1])),
        ),
      ]),
    );
    const broken: string[] = [];
    for (const f of files) {
      for (const m of readFileSync(path.join(ROOT, f), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(m[1])) continue;
        const [target, anchor] = m[1].split('#');
        const file = target ? path.normalize(path.join(path.dirname(f), target)) : f;
        if (!existsSync(path.join(ROOT, file))) broken.push(`${f}: ${m[1]}`);
        else if (anchor && file.endsWith('.md') && !headings.get(file)?.has(anchor)) broken.push(`${f}: ${m[1]} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
