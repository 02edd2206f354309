// Starts s3rver on a free loopback port, storing objects under the folder
// given as the first argument, prints the port, and exits when its parent
// closes stdin, so no server outlives the test run.
'use strict'
const S3rver = require('s3rver')
const server = new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  directory: process.argv[2],
})
server.run().then(
  addr => process.stdout.write('LISTENING ' + addr.port + '\n'),
  err => {
    console.error(err)
    process.exit(1)
  },
)
// A client that resets its connection mid-upload (a cancelled context, the
// fault proxy) must not take the server down with it.
process.on('uncaughtException', err => {
  if (err && (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.message === 'aborted')) return
  console.error(err)
  process.exit(1)
})
process.stdin.on('end', () => process.exit(0))
process.stdin.on('error', () => process.exit(0))
process.stdin.resume()
