// Starts dynalite in memory on a free loopback port, prints the port, and
// exits when its parent closes stdin, so no server outlives the test run.
'use strict'
const dynalite = require('dynalite')
const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
server.listen(0, '127.0.0.1', () => {
  process.stdout.write('LISTENING ' + server.address().port + '\n')
})
process.stdin.on('end', () => process.exit(0))
process.stdin.on('error', () => process.exit(0))
process.stdin.resume()
