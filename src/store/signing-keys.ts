// The keys that sign access tokens, shared by every node through the records: one per rotation
// period, under a key id every node derives alike, so nodes that make the same period's key at the
// same moment keep the one that was stored first.
import type { SqlDb } from './sql.js';
import type { SigningKey, SigningKeyRepo } from './types.js';

interface Row {
  kid: string;
  alg: string;
  public_jwk: string;
  private_jwk: string;
  not_before: number;
  signs_until: number;
  verifies_until: number;
}

const toKey = (r: Row): SigningKey => ({
  kid: r.kid,
  alg: r.alg,
  publicJwk: JSON.parse(r.public_jwk),
  privateJwk: JSON.parse(r.private_jwk),
  notBefore: Number(r.not_before),
  signsUntil: Number(r.signs_until),
  verifiesUntil: Number(r.verifies_until),
});

export class SqlSigningKeys implements SigningKeyRepo {
  constructor(private readonly db: SqlDb) {}

  async live(now: number): Promise<SigningKey[]> {
    return (await this.db.all<Row>('SELECT * FROM signing_keys WHERE verifies_until > ? ORDER BY not_before, kid', now)).map(toKey);
  }

  async addOnce(key: SigningKey): Promise<SigningKey> {
    await this.db.run(
      `INSERT INTO signing_keys (kid, alg, public_jwk, private_jwk, not_before, signs_until, verifies_until)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (kid) DO NOTHING`,
      key.kid,
      key.alg,
      JSON.stringify(key.publicJwk),
      JSON.stringify(key.privateJwk),
      key.notBefore,
      key.signsUntil,
      key.verifiesUntil,
    );
    return toKey((await this.db.get<Row>('SELECT * FROM signing_keys WHERE kid = ?', key.kid))!);
  }

  deleteExpired(now: number): Promise<number> {
    return this.db.run('DELETE FROM signing_keys WHERE verifies_until <= ?', now);
  }
}
