// The gateway alone in its own process, so the load generator does not share its event loop.
import { startGateway } from '../test/helpers/gateway.js';

const gateway = await startGateway();
process.stdout.write(`${new URL(gateway.url).port}\n`);
// Exit normally on SIGTERM so --cpu-prof can write its profile.
process.on('SIGTERM', () => {
  void gateway.close().then(() => process.exit(0));
});
