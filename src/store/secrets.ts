// Secrets shared by every node of an installation (the key of signed result links): kept as records,
// so nodes with their own data dirs sign and verify alike.
import type { SqlDb } from './sql.js';
import type { SecretRepo } from './types.js';

export class SqlSecrets implements SecretRepo {
  constructor(private readonly db: SqlDb) {}

  async getOrCreate(name: string, make: () => string): Promise<string> {
    // Two nodes may both try: the first insert wins and both read the winner.
    await this.db.run('INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', name, make());
    return (await this.db.get<{ value: string }>('SELECT value FROM secrets WHERE name = ?', name))!.value;
  }
}
