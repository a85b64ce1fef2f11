import https from 'node:https';
import { testTls } from '/work/main/test/helpers/tls.js';
import { loadTrustedCas } from '/work/main/src/tls.js';
const t0 = performance.now();
const tls = await testTls();
console.log('gen ms', performance.now() - t0);
const srv = https.createServer({ cert: tls.certPem, key: tls.keyPem }, (q, r) => r.end('hi'));
srv.listen(0, '127.0.0.1', () => {
  const port = (srv.address() as any).port;
  https.get({ host: '127.0.0.1', port, ca: loadTrustedCas(tls.caFile), servername: 'localhost' }, (res) => { res.on('data', d => console.log(String(d))); res.on('end', () => srv.close()); });
});
