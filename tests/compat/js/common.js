'use strict';
// Options every compat script shares: no HTTP address lookup, dialable 127.0.0.1, short
// intervals (tests must not wait on production periods).
exports.options = nameSrv => ({
  nameSrv,
  httpclient: { request() { throw new Error('HTTP address lookup must not happen'); } },
  clientIP: '127.0.0.1',
  pollNameServerInteval: 1000, // sic: ali-ons' spelling
  heartbeatBrokerInterval: 1000,
  rebalanceInterval: 1000,
  persistConsumerOffsetInterval: 500,
});

// --name=value flags after the positional arguments
exports.flags = argv => Object.fromEntries(argv.filter(a => a.startsWith('--'))
  .map(a => { const [k, ...v] = a.slice(2).split('='); return [ k, v.join('=') || 'true' ]; }));

exports.emit = obj => process.stdout.write(JSON.stringify(obj) + '\n');

exports.watchdog = ms => setTimeout(() => { console.error('FAIL: timed out'); process.exit(1); }, ms);

// --accessKey=AK --secretKey=SK: ali-ons signs every request (its own OnsChannel=ALIYUN too)
exports.acl = opts => (opts.accessKey ? { accessKey: opts.accessKey, secretKey: opts.secretKey } : {});
