// listen-localhost.cjs: a node preload (`node -r ./listen-localhost.cjs app.js`)
// that keeps test servers off the network. Servers such as server-everything
// and the conformance suite's scenario servers call listen(port) with no host,
// which binds every interface; with this preload such a bind, or one to an
// explicit wildcard (0.0.0.0, ::), binds 127.0.0.1 instead.
//
// It wraps net.Server.prototype._listen2, the step every TCP listen goes
// through once its address is known, so the bind stays synchronous: code
// that reads server.address().port right after listen(0) keeps working.
// Unix sockets and inherited handles pass through untouched.
//
// With LISTEN_LOCALHOST_ANNOUNCE=1 in the environment it also writes one line
// to stderr per server, once it listens:
//
//	listen-localhost: listening on 127.0.0.1:PORT
//
// so a parent can start a server with PORT=0 and read the port the kernel
// chose, with no race for a "free" port.
// (integration/conformance keeps its own copy of integration/listen-localhost.cjs
// so that the directory stands alone.)
'use strict';

const net = require('net');

const HOST = '127.0.0.1';
const WILDCARDS = new Set(['', '0.0.0.0', '::', '::0', '0:0:0:0:0:0:0:0']);
const announce = process.env.LISTEN_LOCALHOST_ANNOUNCE === '1';

const listen2 = net.Server.prototype._listen2;
if (typeof listen2 !== 'function') {
  // Fail loudly rather than let a server bind every interface.
  throw new Error('listen-localhost: net.Server.prototype._listen2 is missing in node ' + process.version);
}

net.Server.prototype._listen2 = function (address, port, addressType, backlog, fd, flags) {
  const tcp = typeof fd !== 'number' || fd < 0; // fd ≥ 0: an inherited handle
  if (tcp && (address == null || WILDCARDS.has(address))) {
    address = HOST;
    addressType = 4;
    if (announce) {
      this.once('listening', () => {
        const a = this.address();
        if (a && typeof a === 'object') {
          process.stderr.write(`listen-localhost: listening on ${a.address}:${a.port}\n`);
        }
      });
    }
  }
  return listen2.call(this, address, port, addressType, backlog, fd, flags);
};
