// One kafkajs consumer speaking the agent protocol of tests/clients/agents/common.py:
// JSON events on stdout, JSON commands on stdin.
//
// The assignment reported is the `memberAssignment` of kafkajs's GROUP_JOIN instrumentation
// event, with its `memberId`; kafkajs does not report the generation (null). The default
// strategy is kafkajs's own `RoundRobinAssigner`; any other name becomes an assigner of that
// name whose `assign` must never run (the host is the group's leader, kafkajs is a follower).
// Committed offsets are read back with the admin client's `fetchOffsets` (OffsetFetch), as
// the kafkajs consumer has no `committed()`. With --report-records the messages of each batch
// are reported (`records`, proxy mode) and `commit_consumed` commits the offset after the last
// one reported of every partition it holds (kafkajs has no revoke callback, so no
// --commit-on-revoke).
'use strict'

const readline = require('readline')
const { Kafka, logLevel, AssignerProtocol, PartitionAssigners } = require('kafkajs')

const FLAGS = new Set(['report-records'])

function parseArgs (argv) {
  const args = { strategy: [] }
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '')
    if (FLAGS.has(key)) {
      args[key.replace(/-/g, '_')] = true
      i -= 1
      continue
    }
    const value = argv[i + 1]
    if (key === 'strategy') args.strategy.push(value)
    else args[key.replace(/-/g, '_')] = value
  }
  for (const required of ['bootstrap', 'group', 'topics']) {
    if (!args[required]) throw new Error(`--${required} is required`)
  }
  args.topics = args.topics.split(',')
  return args
}

function emit (event, fields = {}) {
  process.stdout.write(JSON.stringify({ ...fields, event }) + '\n')
}

function partitionsOf (memberAssignment) {
  const out = []
  for (const [topic, partitions] of Object.entries(memberAssignment || {})) {
    for (const p of partitions) out.push([topic, p])
  }
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]))
}

// An assigner that only names `name`: the host computes the assignment.
const hostAssigned = name => () => ({
  name,
  version: 0,
  async assign () {
    emit('error', { message: `${name}.assign ran on the client: the host should lead` })
    throw new Error('the host is the leader; a client assign must never run')
  },
  protocol ({ topics }) {
    return {
      name,
      metadata: AssignerProtocol.MemberMetadata.encode({
        version: 0,
        topics,
        userData: Buffer.alloc(0)
      })
    }
  }
})

async function main () {
  const args = parseArgs(process.argv.slice(2))
  const strategies = args.strategy.length ? args.strategy : ['RoundRobinAssigner']
  // --sasl MECHANISM:USER, the password in AGENT_SASL_PASSWORD (never on the command line).
  let sasl
  if (args.sasl) {
    const [mechanism, username] = args.sasl.split(/:(.*)/s)
    const password = process.env.AGENT_SASL_PASSWORD
    if (!username || !password) throw new Error('--sasl MECHANISM:USER needs AGENT_SASL_PASSWORD')
    sasl = { mechanism: mechanism.toLowerCase(), username, password }
  }
  // --ssl-ca FILE: TLS, trusting that CA.
  const ssl = args.ssl_ca ? { ca: [require('fs').readFileSync(args.ssl_ca, 'utf8')] } : undefined
  const kafka = new Kafka({
    clientId: args.client_id || 'kafkajs',
    brokers: args.bootstrap.split(','),
    sasl,
    ssl,
    logLevel: logLevel.ERROR,
    logCreator: () => ({ namespace, label, log }) => process.stderr.write(
      `[kafkajs ${label} ${namespace}] ${log.message} ${JSON.stringify(log)}\n`)
  })
  const consumer = kafka.consumer({
    groupId: args.group,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
    // The host holds an empty fetch for max wait, and kafkajs sends its heartbeats and
    // fetches on one connection: a short wait keeps rebalances quick.
    maxWaitTimeInMs: 500,
    partitionAssigners: strategies.map(name =>
      name === 'RoundRobinAssigner' ? PartitionAssigners.roundRobin : hostAssigned(name))
  })
  let memberId = null
  let assigned = []
  // topic/partition -> the offset after the last message reported
  const positions = new Map()
  consumer.on(consumer.events.GROUP_JOIN, e => {
    memberId = e.payload.memberId
    assigned = partitionsOf(e.payload.memberAssignment)
    const held = new Set(assigned.map(([t, p]) => `${t}/${p}`))
    for (const tp of [...positions.keys()]) if (!held.has(tp)) positions.delete(tp)
    emit('assigned', {
      member_id: e.payload.memberId,
      generation: null,
      protocol: e.payload.groupProtocol,
      partitions: partitionsOf(e.payload.memberAssignment)
    })
  })
  // Every OffsetCommit kafkajs sends, the application's and its own (diagnostics).
  consumer.on(consumer.events.COMMIT_OFFSETS, e =>
    process.stderr.write(
      `[commit] generation=${e.payload.groupGenerationId} ${JSON.stringify(e.payload.topics)}\n`))
  consumer.on(consumer.events.CRASH, e => emit('error', { message: `crash: ${e.payload.error}` }))

  await consumer.connect()
  await consumer.subscribe({ topics: args.topics, fromBeginning: true })
  // Commits are the application's, as in the Python agents: with kafkajs's default autoCommit,
  // the runner commits its own position for every partition whose fetch position differs from
  // the committed offset (OffsetManager.uncommittedOffsets, src/consumer/offsetManager), which
  // overwrites an explicit commitOffsets with the position it started from (0 here).
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      if (!args.report_records || batch.messages.length === 0) return
      const records = batch.messages.map(m =>
        [batch.topic, batch.partition, Number(m.offset), m.key === null ? null : m.key.toString()])
      for (const [t, p, offset] of records) positions.set(`${t}/${p}`, offset + 1)
      emit('records', { records })
    }
  })

  const lines = readline.createInterface({ input: process.stdin })
  let closing = false
  const close = async () => {
    if (closing) return
    closing = true
    await consumer.disconnect()
    emit('closed', { member_id: memberId })
    process.exit(0)
  }
  lines.on('close', close)
  for await (const line of lines) {
    if (!line.trim()) continue
    const cmd = JSON.parse(line)
    try {
      if (cmd.cmd === 'commit') {
        await consumer.commitOffsets(cmd.offsets.map(([topic, partition, offset]) =>
          ({ topic, partition, offset: String(offset) })))
        emit('committed', { offsets: cmd.offsets })
      } else if (cmd.cmd === 'commit_consumed') {
        const offsets = assigned
          .filter(([t, p]) => positions.has(`${t}/${p}`))
          .map(([t, p]) => [t, p, positions.get(`${t}/${p}`)])
        if (offsets.length) {
          await consumer.commitOffsets(offsets.map(([topic, partition, offset]) =>
            ({ topic, partition, offset: String(offset) })))
        }
        emit('committed', { offsets })
      } else if (cmd.cmd === 'committed') {
        const admin = kafka.admin()
        await admin.connect()
        const topics = [...new Set(cmd.partitions.map(([t]) => t))]
        const got = await admin.fetchOffsets({ groupId: args.group, topics })
        await admin.disconnect()
        const wanted = new Set(cmd.partitions.map(([t, p]) => `${t}/${p}`))
        const offsets = []
        for (const { topic, partitions } of got) {
          for (const { partition, offset } of partitions) {
            if (wanted.has(`${topic}/${partition}`)) {
              offsets.push([topic, partition, Number(offset) >= 0 ? Number(offset) : null])
            }
          }
        }
        emit('fetched', { offsets: offsets.sort() })
      } else if (cmd.cmd === 'close') {
        await close()
      }
    } catch (e) {
      emit('error', { message: `${cmd.cmd}: ${e}` })
    }
  }
}

main().catch(e => {
  emit('error', { message: `fatal: ${e.stack || e}` })
  process.exit(1)
})
