// Signed access to the assets of STAC API collections, against stand-ins on loopback that check
// what the real services check: Planetary Computer (a SAS token endpoint, and blob storage that
// refuses a request without the token it issued for that container) and S3 (storage that verifies
// the SigV4 query signature with its own code below, and the requester-pays flag).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import type { IncomingMessage } from 'node:http';
import { addUser, http, login, removeDir, startServer, tempDir, ROOT, type TestServer } from './helpers.js';
import { collectionDoc, EPSG, itemDoc, listen, N, RES, SCENE, startFileServer, startStacApi, writeScene, xeoAsync, X0, Y0, type FileServer, type Listening, type StacApi } from './stac-fixtures.js';

const { transformBox } = await import(path.join(ROOT, 'dist/src/geometry/crs.js'));
const { presignS3 } = await import(path.join(ROOT, 'dist/src/data/stac-signers.js'));

const REMOTE = 'sentinel-2-l2a';
const KEY_ID = 'AKIDSTANDIN';
const SECRET = 'stand-in/secret+key';
const SESSION = 'session-token/of+test';
const REGION = 'eu-central-1';

let dir: string;
let sas: Listening;
let tokenCalls: string[];
const issued = new Map<string, string>();
let blob: FileServer;
let s3: FileServer;
let apiPc: StacApi;
let apiS3: StacApi;
let s: TestServer;
let token: string;

const boxOfCols = (c0: number, c1: number) => transformBox([X0 + c0 * RES, Y0 - N * RES, X0 + c1 * RES, Y0], EPSG, 4326);
const items = (href: (id: string, key: string) => string) => SCENE.map((it) => itemDoc(it, REMOTE, boxOfCols(...it.cols), href));

const enc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** The S3 stand-in's check of a presigned GET (AWS SigV4, query form), written apart from the signer it tests. */
function verifySigV4(req: IncomingMessage, url: URL, secret: string): string | null {
  const q = url.searchParams;
  if (q.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') return 'algorithm';
  const [keyId, date, region, service, term] = (q.get('X-Amz-Credential') ?? '').split('/');
  if (keyId !== KEY_ID || region !== REGION || service !== 's3' || term !== 'aws4_request') return 'credential';
  if (q.get('X-Amz-Security-Token') !== SESSION) return 'session token';
  if (q.get('x-amz-request-payer') !== 'requester') return 'requester pays';
  const amzDate = q.get('X-Amz-Date') ?? '';
  const t = Date.UTC(+amzDate.slice(0, 4), +amzDate.slice(4, 6) - 1, +amzDate.slice(6, 8), +amzDate.slice(9, 11), +amzDate.slice(11, 13), +amzDate.slice(13, 15));
  if (!amzDate.startsWith(date) || !(t <= Date.now() && Date.now() < t + Number(q.get('X-Amz-Expires')) * 1000)) return 'expired';
  if (q.get('X-Amz-SignedHeaders') !== 'host') return 'signed headers';
  const pairs = [...q].filter(([k]) => k !== 'X-Amz-Signature').map(([k, v]) => [enc(k), enc(v)]);
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const canonical = ['GET', url.pathname, pairs.map(([k, v]) => `${k}=${v}`).join('&'), `host:${req.headers.host}`, '', 'host', 'UNSIGNED-PAYLOAD'].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, `${date}/${region}/s3/aws4_request`, createHash('sha256').update(canonical).digest('hex')].join('\n');
  let k: Buffer = createHmac('sha256', `AWS4${secret}`).update(date).digest();
  for (const part of [region, 's3', 'aws4_request']) k = createHmac('sha256', k).update(part).digest();
  return createHmac('sha256', k).update(toSign).digest('hex') === q.get('X-Amz-Signature') ? null : 'signature';
}

beforeAll(async () => {
  dir = tempDir('xeo-signers-');
  await writeScene(path.join(dir, 'scene'));
  // Blob storage as pcacct/sentinel2-l2/..., the S3 bucket as bucket/...: the same files.
  mkdirSync(path.join(dir, 'pcacct'));
  symlinkSync(path.join(dir, 'scene'), path.join(dir, 'pcacct', 'sentinel2-l2'));
  symlinkSync(path.join(dir, 'scene'), path.join(dir, 'bucket'));
  tokenCalls = [];
  sas = await listen((req, res) => {
    const m = /^\/api\/sas\/v1\/token\/([^/]+)\/([^/]+)$/.exec(req.url ?? '');
    if (!m) return void res.writeHead(404).end();
    tokenCalls.push(`${m[1]}/${m[2]}`);
    const sig = randomBytes(12).toString('hex');
    issued.set(`${m[1]}/${m[2]}`, sig);
    const expiry = new Date(Date.now() + 3600_000).toISOString();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ 'msft:expiry': expiry, token: `st=2024-01-01T00%3A00%3A00Z&se=${encodeURIComponent(expiry)}&sp=rl&sv=2021-06-08&sr=c&sig=${sig}` }));
  });
  blob = await startFileServer(dir, (_req, url) => {
    const [account, container] = url.pathname.split('/').filter(Boolean);
    return !!url.searchParams.get('sig') && url.searchParams.get('sig') === issued.get(`${account}/${container}`) && url.searchParams.get('sr') === 'c';
  });
  s3 = await startFileServer(dir, (req, url) => url.pathname.startsWith('/bucket/') && verifySigV4(req, url, SECRET) === null);
  const sceneBox = boxOfCols(0, N);
  apiPc = await startStacApi({ collection: collectionDoc(REMOTE, sceneBox), items: items((id, key) => `${blob.url}/pcacct/sentinel2-l2/${id}/${key}.tif`) });
  apiS3 = await startStacApi({ collection: collectionDoc(REMOTE, sceneBox), items: items((id, key) => `s3://bucket/${id}/${key}.tif`) });
  const dataDir = tempDir();
  for (const [api, id, signer] of [
    [apiPc, 'pc', 'planetary-computer'],
    [apiPc, 'pc-unsigned', 'none'],
    [apiS3, 's3', 's3'],
  ] as const) {
    const r = await xeoAsync(['collections', 'add-stac', api.url, REMOTE, '--id', id, '--signer', signer], { dataDir });
    expect(r.status, r.stderr).toBe(0);
  }
  addUser(dataDir, 'alice', 'pa');
  s = await startServer({ ...signerEnv(SECRET), XEO_OUTBOUND_ALLOW: '127.0.0.1' }, dataDir);
  token = await login(s, 'alice', 'pa');
}, 120_000);

const signerEnv = (secret: string) => ({
  XEO_PC_SAS_URL: `${sas.url}/api/sas/v1/token`,
  XEO_PC_BLOB_ENDPOINT: blob.url,
  AWS_ACCESS_KEY_ID: KEY_ID,
  AWS_SECRET_ACCESS_KEY: secret,
  AWS_SESSION_TOKEN: SESSION,
  AWS_REGION: REGION,
  XEO_S3_ENDPOINT: s3.url,
  XEO_S3_REQUESTER_PAYS: 'true',
});

afterAll(async () => {
  await s?.stop();
  for (const x of [sas, blob, s3, apiPc, apiS3]) await x?.close();
  if (s) removeDir(s.dataDir);
  removeDir(dir);
});

const window = (col: number) => ({ west: X0 + col * RES, east: X0 + (col + 200) * RES, north: Y0 - 50 * RES, south: Y0 - 250 * RES, crs: EPSG });
const graph = (id: string, col = 100) => ({
  l: { process_id: 'load_collection', arguments: { id, spatial_extent: window(col), temporal_extent: ['2024-05-01', '2024-06-01'], bands: ['red', 'nir'] } },
  n: { process_id: 'ndvi', arguments: { data: { from_node: 'l' } } },
  s: { process_id: 'save_result', arguments: { data: { from_node: 'n' }, format: 'GTiff' }, result: true },
});
const result = (server: TestServer, auth: string, g: unknown) => http('POST', `${server.base}/result`, { token: auth, body: JSON.stringify({ process: { process_graph: g } }) });

describe('planetary-computer signer', () => {
  it('signs blob URLs with the SAS token of their container, fetched once and reused until it expires', async () => {
    const first = await result(s, token, graph('pc', 100));
    expect(first.status, first.text).toBe(200);
    const again = await result(s, token, graph('pc', 250));
    expect(again.status, again.text).toBe(200);
    expect(tokenCalls).toEqual(['pcacct/sentinel2-l2']);
    expect(blob.refused).toEqual([]);
    expect(blob.hits.get('/pcacct/sentinel2-l2/S2_20240510_W/red.tif')).toBeGreaterThan(0);
  });

  it('is what makes the storage answer: the same collection unsigned is refused', async () => {
    const r = await result(s, token, graph('pc-unsigned'));
    expect(r.status).not.toBe(200);
    expect(blob.refused.length).toBeGreaterThan(0);
  });
});

describe('s3 signer', () => {
  it('presigns s3:// hrefs with SigV4 (session token, requester pays) that the storage verifies', async () => {
    const r = await result(s, token, graph('s3'));
    expect(r.status, r.text).toBe(200);
    expect(s3.refused).toEqual([]);
    expect(s3.hits.get('/bucket/S2_20240510_E/nir.tif')).toBeGreaterThan(0);
  });

  it('is refused by the storage with a wrong secret key', async () => {
    const other = await startServer({ ...signerEnv('not-the-secret'), XEO_OUTBOUND_ALLOW: '127.0.0.1' }, s.dataDir);
    try {
      const before = s3.refused.length;
      const r = await result(other, await login(other, 'alice', 'pa'), graph('s3', 50));
      expect(r.status).not.toBe(200);
      expect(s3.refused.length).toBeGreaterThan(before);
    } finally {
      await other.stop();
    }
  });

  it("computes the signature of AWS's documented presigned URL example", () => {
    const url = presignS3({
      url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'),
      region: 'us-east-1',
      accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      amzDate: '20130524T000000Z',
      expires: 86400,
    });
    expect(new URL(url).searchParams.get('X-Amz-Signature')).toBe('aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404');
  });
});
