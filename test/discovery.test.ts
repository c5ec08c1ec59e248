// Discovery surface: well-known document, capabilities per version, conformance, OpenAPI, the
// discovery documents, unsupported endpoints per version, and the brand word.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { startServer, http, expectError, removeDir, type TestServer } from './helpers.js';

describe('discovery with the default brand', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ XEO_WEB_EDITOR_URL: 'https://editor.openeo.org/?server=here' });
  });
  afterAll(async () => {
    await s.stop();
    removeDir(s.dataDir);
  });

  it('lists four versions at /.well-known/xeo, each reachable at its own prefix', async () => {
    const r = await http('GET', `${s.url}/.well-known/xeo`);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    const versions = r.json.versions;
    expect(versions.map((v: any) => v.api_version)).toEqual(['1.0.0-rc.2', '1.0.1', '1.2.0', '1.3.0']);
    for (const v of versions) {
      expect(v.production).toBe(false);
      const caps = await http('GET', `${v.url}/`);
      expect(caps.status).toBe(200);
      expect(caps.json.api_version).toBe(v.api_version);
      // production must agree between the well-known document and GET /
      expect(caps.json.production).toBe(v.production);
      // the prefix without a trailing slash works too
      expect((await http('GET', v.url)).json.api_version).toBe(v.api_version);
    }
    expect((await http('GET', `${s.url}/.well-known/openeo`)).status).toBe(404);
  });

  it('answers GET / of 1.2.0 with every field', async () => {
    const r = await http('GET', `${s.base}/`);
    const c = r.json;
    expect(c).toMatchObject({ api_version: '1.2.0', stac_version: '1.0.0', type: 'Catalog', id: 'xeo', production: false });
    expect(typeof c.backend_version).toBe('string');
    expect(typeof c.title).toBe('string');
    expect(typeof c.description).toBe('string');
    expect(c.conformsTo).toContain('https://api.openeo.org/1.2.0');
    expect(c.billing).toEqual({
      currency: 'credits',
      default_plan: 'free',
      plans: [{ name: 'free', description: expect.any(String), paid: false }],
    });
    const rels = Object.fromEntries(c.links.map((l: any) => [l.rel, l.href]));
    expect(rels['version-history']).toBe(`${s.url}/.well-known/xeo`);
    expect(rels.conformance).toBe(`${s.base}/conformance`);
    expect(rels.data).toBe(`${s.base}/collections`);
    expect(rels['service-desc']).toBe(`${s.base}/openapi.json`);
    // endpoints: each path once, GET / not listed, placeholders for what we do not offer not listed
    const paths = c.endpoints.map((e: any) => e.path);
    expect(new Set(paths).size).toBe(paths.length);
    expect(paths).not.toContain('/');
    expect(c.endpoints).toContainEqual({ path: '/process_graphs/{process_graph_id}', methods: ['GET', 'PUT', 'PATCH', 'DELETE'] });
    expect(c.endpoints).toContainEqual({ path: '/files/{path}', methods: ['GET', 'PUT', 'DELETE'] });
    expect(c.endpoints).toContainEqual({ path: '/me', methods: ['GET'] });
    // without OIDC providers configured, /credentials/oidc is not offered
    expect(paths).not.toContain('/credentials/oidc');
    expect(c.endpoints).toContainEqual({ path: '/jobs/{job_id}/results', methods: ['GET', 'POST', 'DELETE'] });
    // the signed download links of job results are ours, not the spec's
    expect(paths.some((p: string) => p.startsWith('/download'))).toBe(false);
  });

  it('serves each listed endpoint (no listed path answers 404 or 501)', async () => {
    const c = (await http('GET', `${s.base}/`)).json;
    for (const e of c.endpoints) {
      if (!e.methods.includes('GET') || e.path.includes('{')) continue;
      const r = await http('GET', `${s.base}${e.path}`);
      expect([200, 401, 403], `${e.path}`).toContain(r.status);
    }
  });

  it('differs per version as the profiles say', async () => {
    const v101 = (await http('GET', `${s.url}/1.0.1/`)).json;
    expect(v101.api_version).toBe('1.0.1');
    expect(v101.type).toBeUndefined();
    expect(v101.conformsTo).toBeUndefined();
    const rc2 = (await http('GET', `${s.url}/1.0.0-rc.2/`)).json;
    expect(rc2.stac_version).toBe('0.9.0');
    // production is stated explicitly, so the rc.2 default (true) does not apply
    expect(rc2.production).toBe(false);
    // 1.2.0 may answer 404 for unsupported endpoints (here OIDC sign-in, without providers); 1.0.x must answer 501
    expectError(await http('GET', `${s.base}/credentials/oidc`), 404, 'NotFound');
    expectError(await http('GET', `${s.url}/1.0.1/credentials/oidc`), 501, 'FeatureUnsupported');
    expectError(await http('GET', `${s.url}/1.0.0-rc.2/credentials/oidc`, { headers: { origin: 'http://x.test' } }), 501, 'FeatureUnsupported');
    // queryables exist from 1.2.0 on
    expectError(await http('GET', `${s.base}/collections/x/queryables`), 404, 'CollectionNotFound');
    expectError(await http('GET', `${s.url}/1.0.1/collections/x/queryables`), 404, 'NotFound');
  });

  it('answers conformance, the discovery documents and the OpenAPI description', async () => {
    const conf = await http('GET', `${s.base}/conformance`);
    expect(conf.json.conformsTo).toEqual((await http('GET', `${s.base}/`)).json.conformsTo);
    const ff = await http('GET', `${s.base}/file_formats`);
    expect(ff.status).toBe(200);
    expect(ff.json).toMatchObject({ input: expect.any(Object), output: expect.any(Object) });
    expect((await http('GET', `${s.base}/service_types`)).json).toEqual(expect.any(Object));
    expect((await http('GET', `${s.base}/udf_runtimes`)).json).toEqual(expect.any(Object));
    const api = await http('GET', `${s.base}/openapi.json`);
    expect(api.status).toBe(200);
    expect(api.headers['content-type']).toContain('application/vnd.oai.openapi+json');
    expect(api.json.openapi).toBe('3.0.3');
    expect(api.json.servers[0].url).toBe(s.base);
    expect(Object.keys(api.json.paths)).toContain('/process_graphs/{process_graph_id}');
    expect(api.json.paths['/process_graphs'].post.responses['201'].headers).toHaveProperty('Xeo-Identifier');
    expect(api.json.paths['/credentials/oidc']).toBeUndefined();
    expect(api.json.paths['/jobs/{job_id}'].patch.responses['204']).toBeDefined();
  });

  it('answers unknown paths and versions with specific 404 codes', async () => {
    expectError(await http('GET', `${s.base}/nothing/here`), 404, 'NotFound');
    expectError(await http('GET', `${s.url}/0.4.2/`), 404, 'UnsupportedApiVersion');
    expectError(await http('GET', `${s.url}/v1.1/collections`), 404, 'UnsupportedApiVersion');
    expectError(await http('GET', `${s.url}/favicon.ico`), 404, 'NotFound');
  });

  it('redirects the host root to the newest version and answers HEAD like GET without a body', async () => {
    const r = await http('GET', `${s.url}/`);
    expect(r.status).toBe(302);
    expect(r.headers.location).toBe(`${s.url}/1.3.0/`);
    const head = await http('HEAD', `${s.base}/`);
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(Number(head.headers['content-length'])).toBe((await http('GET', `${s.base}/`)).body.length);
  });

  it('answers GET / of 1.3.0 with type, conformsTo as /conformance, the JWT and extension classes', async () => {
    const c = (await http('GET', `${s.url}/1.3.0/`)).json;
    expect(c).toMatchObject({ api_version: '1.3.0', stac_version: '1.0.0', type: 'Catalog', production: false });
    expect(c.conformsTo).toEqual((await http('GET', `${s.url}/1.3.0/conformance`)).json.conformsTo);
    for (const cls of [
      'https://api.openeo.org/1.3.0',
      'https://api.openeo.org/1.3.0/authentication/jwt',
      'https://api.openeo.org/extensions/processing-parameters/0.1.0',
      'https://api.openeo.org/extensions/remote-process-definition/0.1.0',
    ]) {
      expect(c.conformsTo).toContain(cls);
    }
    // JWTs are accepted on every version, but only 1.3.0 declares the class (clients send raw JWTs then).
    expect((await http('GET', `${s.base}/`)).json.conformsTo).not.toContain('https://api.openeo.org/1.2.0/authentication/jwt');
    const rels = Object.fromEntries(c.links.map((l: any) => [l.rel, l]));
    expect(rels['web-editor']).toMatchObject({ href: 'https://editor.openeo.org/?server=here', type: 'text/html' });
    expect(rels.jwks.href).toBe(`${s.url}/.well-known/jwks.json`);
    const paths = c.endpoints.map((e: any) => e.path);
    for (const p of ['/processing_parameters', '/collections/{collection_id}/queryables', '/logs/{log_id}']) expect(paths).toContain(p);
    const processes = (await http('GET', `${s.url}/1.3.0/processes`)).json;
    expect(processes.version).toBe('2.0.0-rc.2');
    expect((await http('GET', `${s.base}/processes`)).json.version).toBeUndefined();
    // From 1.3.0 on the runtimes list must name one (AssemblyScript is always there).
    const runtimes = (await http('GET', `${s.base}/udf_runtimes`)).json;
    expect(Object.keys(runtimes)).toContain('AssemblyScript');
    expect(paths).toContain('/udf_runtimes');
    expect((await http('GET', `${s.url}/1.3.0/udf_runtimes`)).json).toEqual(runtimes);
    expectError(await http('GET', `${s.url}/1.3.0/credentials/oidc`), 404, 'NotFound');
  });

  it('ignores unknown query parameters on discovery', async () => {
    expect((await http('GET', `${s.base}/?foo=bar&limit=x`)).status).toBe(200);
  });
});

describe('brand word openeo, production', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ XEO_BRAND: 'openeo', XEO_PRODUCTION: 'true' });
  });
  afterAll(async () => {
    await s.stop();
    removeDir(s.dataDir);
  });

  it('moves the well-known path and every header to the openEO names', async () => {
    const wk = await http('GET', `${s.url}/.well-known/openeo`);
    expect(wk.status).toBe(200);
    expect(wk.headers['access-control-expose-headers']).toBe('Link, Location, OpenEO-Costs, OpenEO-Identifier, X-Request-Id');
    expect((await http('GET', `${s.url}/.well-known/xeo`)).status).toBe(404);
    const caps = (await http('GET', `${s.base}/`)).json;
    expect(caps.id).toBe('openeo');
    expect(caps.links.find((l: any) => l.rel === 'version-history').href).toBe(`${s.url}/.well-known/openeo`);
    const api = (await http('GET', `${s.base}/openapi.json`)).json;
    expect(api.paths['/process_graphs'].post.responses['201'].headers).toHaveProperty('OpenEO-Identifier');
  });

  it('says production where the administrator does, for 1.3.0 only once a UDF runtime is listed', async () => {
    const wk = (await http('GET', `${s.url}/.well-known/openeo`)).json;
    const runtimes = Object.keys((await http('GET', `${s.url}/1.2.0/udf_runtimes`)).json).length;
    for (const v of wk.versions) {
      const want = v.api_version === '1.3.0' ? runtimes > 0 : true;
      expect(v.production, v.api_version).toBe(want);
      expect((await http('GET', `${v.url}/`)).json.production, v.api_version).toBe(want);
    }
  });
});
