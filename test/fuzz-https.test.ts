// The hostile-input suite of fuzz.test.ts, every family and the storm with the same seeds, against
// the server on HTTPS (a certificate made with openssl for the run): TLS must change no answer.
import { fuzzSuite } from './fuzz/suite.js';
import { hasOpenssl } from '../bench/certificate.js';
import { describeWithTool } from './system-tools.js';

describeWithTool(hasOpenssl, 'openssl', 'over HTTPS', () => fuzzSuite({ tls: true }));
