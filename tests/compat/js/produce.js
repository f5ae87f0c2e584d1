'use strict';
// Usage: node produce.js NAMESRV TOPIC COUNT [--interval=MS] [--run=ID] [--accessKey=AK --secretKey=SK]
//        [--deliverInMs=MS]: each a timer message, as a 4.9.8 client sends one -- only the user
//        property TIMER_DELIVER_MS (now + MS), printed as deliverAt
// Sends COUNT messages (tags tag0..tag2, two keys, a user property) and prints one JSON line
// per message: its body and the send result (or the error). Exit 0 when all were attempted.
const { Producer, Message } = require('ali-ons');
const { options, flags, emit, watchdog, acl } = require('./common');

const [nameSrv, topic, countArg] = process.argv.slice(2);
const opts = flags(process.argv.slice(5));
const run = opts.run || `r${process.pid}`;
const dog = watchdog(Number(opts.timeout || 120000));

async function main() {
  const producer = new Producer({ ...options(nameSrv), ...acl(opts), producerGroup: `compat_pg_${run}` });
  await producer.ready();
  emit({ ready: true });
  for (let i = 0; i < Number(countArg); i++) {
    const body = `${run}:${i}`;
    const msg = new Message(topic, `tag${i % 3}`, body);
    msg.keys = [ `key-${i}`, `alt-${run}-${i}` ];
    msg.properties.customProp = `value-${i}`;
    const deliverAt = opts.deliverInMs ? Date.now() + Number(opts.deliverInMs) : undefined;
    if (deliverAt) msg.properties.TIMER_DELIVER_MS = String(deliverAt);
    try {
      const res = await producer.send(msg);
      emit({ i, body, deliverAt, status: res.sendStatus, msgId: res.msgId, queueId: res.messageQueue.queueId,
        broker: res.messageQueue.brokerName, queueOffset: Number(res.queueOffset) });
    } catch (err) {
      emit({ i, body, error: String(err && err.message || err) });
    }
    if (opts.interval) await new Promise(r => setTimeout(r, Number(opts.interval)));
  }
  clearTimeout(dog);
  await Promise.race([ producer.close().catch(() => {}), new Promise(r => setTimeout(r, 2000)) ]);
  process.exit(0);
}

main().catch(err => { console.error('FAIL:', err && err.stack || err); process.exit(1); });
