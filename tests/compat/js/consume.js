'use strict';
// Usage: node consume.js NAMESRV TOPIC GROUP [--expect=N] [--idle-ms=MS] [--max-ms=MS]
//          [--fail=BODY,BODY] [--from=first|last] [--accessKey=AK --secretKey=SK] [--sql=EXPR]
// A clustering push consumer of TOPIC (all tags; with --sql, the SQL92 expression EXPR, which
// ali-ons sends in every pull). Prints one JSON line per delivery. Throws
// once for each body listed in --fail (so it is redelivered through %RETRY%). Exits when
// --expect distinct bodies arrived (after --idle-ms more, to catch duplicates), or after
// --idle-ms without a new message once one arrived, or at --max-ms.
const { Consumer } = require('ali-ons');
const { options, flags, emit, acl } = require('./common');

const [nameSrv, topic, group] = process.argv.slice(2);
const opts = flags(process.argv.slice(5));
const expect = Number(opts.expect || 0);
const idleMs = Number(opts['idle-ms'] || 3000);
const failOnce = new Set((opts.fail || '').split(',').filter(Boolean));
const seen = new Set();
let idleTimer = null;

function finish(code) {
  emit({ done: true, distinct: seen.size });
  process.exit(code);
}

setTimeout(() => finish(expect && seen.size < expect ? 1 : 0), Number(opts['max-ms'] || 60000));

const consumer = new Consumer({
  ...options(nameSrv),
  ...acl(opts),
  consumerGroup: group,
  consumeFromWhere: opts.from === 'last' ? 'CONSUME_FROM_LAST_OFFSET' : 'CONSUME_FROM_FIRST_OFFSET',
  brokerSuspendMaxTimeMillis: 2000,
  consumerTimeoutMillisWhenSuspend: 5000,
});
consumer.on('error', err => process.stderr.write(`consumer event: ${err.message}\n`)); // often benign

const selector = opts.sql ? { expressionType: 'SQL92', subString: opts.sql } : '*';
consumer.subscribe(topic, selector, async msg => {
  const body = msg.body.toString();
  emit({ body, topic: msg.topic, msgId: msg.msgId, tags: msg.tags, keys: msg.keys,
    props: msg.properties, queueId: msg.queueId, queueOffset: Number(msg.queueOffset),
    bornTimestamp: Number(msg.bornTimestamp), storeTimestamp: Number(msg.storeTimestamp),
    reconsumeTimes: msg.reconsumeTimes, storeHost: msg.storeHost, receivedAt: Date.now() });
  if (failOnce.delete(body)) throw new Error(`compat: failing ${body} once on purpose`);
  seen.add(body);
  clearTimeout(idleTimer);
  idleTimer = setTimeout(() => finish(0), expect && seen.size >= expect ? Math.min(idleMs, 1500) : idleMs);
});
emit({ ready: true });
