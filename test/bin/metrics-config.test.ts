import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../bin/config.js';

describe('configuration of metrics and shutdown', () => {
  it('defaults: /metrics is public, the drain lasts 25 s', () => {
    const config = loadConfig({});
    assert.equal(config.metricsToken, undefined);
    assert.equal(config.shutdownDrainMs, 25_000);
    assert.equal(loadConfig({ METRICS_TOKEN: '' }).metricsToken, undefined);
  });

  it('takes METRICS_TOKEN and SHUTDOWN_DRAIN_SECONDS', () => {
    const config = loadConfig({ METRICS_TOKEN: 'scrape-me_1', SHUTDOWN_DRAIN_SECONDS: '5' });
    assert.equal(config.metricsToken, 'scrape-me_1');
    assert.equal(config.shutdownDrainMs, 5_000);
    assert.equal(loadConfig({ SHUTDOWN_DRAIN_SECONDS: '0' }).shutdownDrainMs, 0);
  });

  it('refuses a token with whitespace (it could never be sent as a bearer token) and a negative drain', () => {
    assert.throws(() => loadConfig({ METRICS_TOKEN: 'two words' }), ConfigError);
    assert.throws(() => loadConfig({ SHUTDOWN_DRAIN_SECONDS: '-1' }), /SHUTDOWN_DRAIN_SECONDS/);
  });
});
