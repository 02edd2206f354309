// Starts dynalite in memory on a free loopback port, prints the port, and
// exits when its parent closes stdin, so no server outlives the test run.
'use strict'
const dynalite = require('dynalite')
const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
server.listen(0, '127.0.0.1', () => {
  process.stdout.write('LISTENING ' + server.address().port + '\n')
})
// dynalite 4.0.0 rethrows a request stream's error (index.js: req.on('error',
// err => { throw err })), so one client aborting a request mid-upload, as a
// cancelled context does, would kill the whole server.
process.on('uncaughtException', err => {
  if (err && (err.code === 'ECONNRESET' || err.message === 'aborted')) return
  console.error(err)
  process.exit(1)
})
process.stdin.on('end', () => process.exit(0))
process.stdin.on('error', () => process.exit(0))
process.stdin.resume()
