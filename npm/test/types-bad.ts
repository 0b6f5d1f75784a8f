// Must NOT compile: an answer object of the wrong shape. The test script
// asserts tsc reports exactly this line.
import { AepClient } from 'aep-client';

export async function wrong(client: AepClient): Promise<void> {
  await client.respond('request-id', { choice: 'allow' });
}
