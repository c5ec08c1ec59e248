// Our access tokens: JWTs (RFC 7519) signed with the key ring's current key. Claims: `iss` the
// basic-credentials URL of the version it was asked through, on the installation's URL (its public
// URL, else the first node's, kept with the records), `aud` that URL, `sub` the user, `iat`/`nbf`,
// `exp`, and a random `jti` whose SHA-256 is the token's row in the records (deleting it revokes
// the token). Verification accepts exactly that: alg EdDSA (so `none`, HMAC with a public key and
// every other algorithm are refused), one of our keys, one of our issuers and our audience, the
// times with a small tolerance. Why a token failed is never told: every failure is TokenInvalid.
import { randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { ApiError } from '../core/errors.js';
import { TOKEN_ALG, type KeyRing } from './keys.js';

/** Who may be named as issuer and audience (known once the server is bound: they contain its URL). */
export interface TokenParties {
  /** The issuer of tokens handed out by the version under `prefix`: its basic-credentials URL. */
  issuer(prefix: string): string;
  /** Our issuers: the basic-credentials URL of every served version. */
  issuers(): string[];
  /** The audience of our tokens: the public URL of this installation. */
  audience(): string;
}

export interface VerifiedToken {
  sub: string;
  jti: string;
  /** ms since epoch */
  expiresAt: number;
}

/** Three base64url parts: a compact JWS. Our old opaque tokens (one base64url word) are not. */
export const looksLikeJwt = (token: string) => /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token);

/** The unverified claims of a JWT, to tell whose it is; null when it is not one. */
export function peekClaims(token: string): JWTPayload | null {
  try {
    return decodeJwt(token);
  } catch {
    return null;
  }
}

const invalid = () => new ApiError('TokenInvalid');

/** Clock difference allowed for `exp` and `nbf` (our own tokens' rows expire exactly, by the records' clock). */
const CLAIM_TOLERANCE_S = 5;

export class TokenSigner {
  constructor(
    private readonly ring: KeyRing,
    private readonly parties: TokenParties,
  ) {}

  /** A token for `userId`, valid `ttlSeconds`, handed out by the version under `prefix`. */
  async issue(userId: string, prefix: string, ttlSeconds: number): Promise<{ token: string; jti: string; expiresAt: number }> {
    const { kid, key } = await this.ring.signing();
    const jti = randomBytes(16).toString('base64url');
    const issued = Date.now();
    const now = Math.floor(issued / 1000);
    // The row expires exactly `ttlSeconds` after now; the claim (whole seconds) not before it.
    const expiresAt = issued + ttlSeconds * 1000;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: TOKEN_ALG, kid, typ: 'JWT' })
      .setIssuer(this.parties.issuer(prefix))
      .setAudience(this.parties.audience())
      .setSubject(userId)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(Math.ceil(expiresAt / 1000))
      .setJti(jti)
      .sign(key);
    return { token, jti, expiresAt };
  }

  /** Whether `iss` names us (then the token must verify as ours, or it is invalid). */
  ours(iss: unknown): boolean {
    return typeof iss === 'string' && this.parties.issuers().includes(iss);
  }

  async verify(token: string): Promise<VerifiedToken> {
    let kid: unknown;
    try {
      const header = decodeProtectedHeader(token);
      if (header.alg !== TOKEN_ALG) throw invalid();
      kid = header.kid;
    } catch {
      throw invalid();
    }
    if (typeof kid !== 'string') throw invalid();
    const key = await this.ring.verifying(kid);
    if (!key) throw invalid();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: [TOKEN_ALG],
        issuer: this.parties.issuers(),
        audience: this.parties.audience(),
        requiredClaims: ['iss', 'aud', 'sub', 'iat', 'exp', 'jti'],
        clockTolerance: CLAIM_TOLERANCE_S,
      }));
    } catch {
      throw invalid();
    }
    // jose checks `nbf` but not an `iat` in the future.
    if (typeof payload.iat !== 'number' || payload.iat > Date.now() / 1000 + CLAIM_TOLERANCE_S) throw invalid();
    if (typeof payload.sub !== 'string' || !payload.sub || typeof payload.jti !== 'string' || !payload.jti) throw invalid();
    return { sub: payload.sub, jti: payload.jti, expiresAt: payload.exp! * 1000 };
  }
}
