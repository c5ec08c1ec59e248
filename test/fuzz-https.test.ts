// The hostile-input suite of fuzz.test.ts, every family and the storm with the same seeds, against
// the server on HTTPS (a certificate made with openssl for the run): TLS must change no answer.
// Half of the requests of each family but the endpoint one, which must reach every endpoint five
// times (the first half of the same sequences): what TLS could change is
// framing and connection handling, which half the requests cover as well, in half the time.
import { fuzzSuite } from './fuzz/suite.js';
import { hasOpenssl } from '../bench/certificate.js';
import { describeWithTool } from './system-tools.js';

describeWithTool(hasOpenssl, 'openssl', 'over HTTPS', () => fuzzSuite({ tls: true, share: 0.5 }));
