// The websocket of the live view, /ws/live?deployment=ID: JSON messages
// ({type: "snapshot", snapshot} and {type: "event", event}), reconnected
// with exponential backoff (0.5 s doubling to 10 s, with jitter) whenever
// it closes. onState hears 'connecting', 'open', 'retrying' (with the
// delay in ms) and 'closed' (after stop()).

const MIN_DELAY = 500
const MAX_DELAY = 10000

export class LiveSocket {
  constructor(deployment, { onMessage, onState }) {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws'
    this.url = `${scheme}://${location.host}/ws/live?deployment=${encodeURIComponent(deployment)}`
    this.onMessage = onMessage
    this.onState = onState || (() => {})
    this.failures = 0
    this.stopped = false
    this.ws = null
    this.timer = null
  }

  start() {
    this.stopped = false
    this.connect()
  }

  stop() {
    this.stopped = true
    clearTimeout(this.timer)
    if (this.ws) this.ws.close(1000, 'leaving')
    this.ws = null
    this.onState('closed')
  }

  connect() {
    clearTimeout(this.timer)
    this.onState('connecting')
    let ws
    try {
      ws = new WebSocket(this.url)
    } catch (err) {
      this.retry(err)
      return
    }
    this.ws = ws
    let got = false
    ws.addEventListener('open', () => this.onState('open'))
    ws.addEventListener('message', (e) => {
      if (!got) {
        got = true
        this.failures = 0
      }
      let msg
      try {
        msg = JSON.parse(e.data)
      } catch {
        return
      }
      try {
        this.onMessage(msg)
      } catch (err) {
        console.error('live view: handling a message', err)
      }
    })
    ws.addEventListener('close', (e) => {
      if (this.ws !== ws) return
      this.ws = null
      if (!this.stopped) this.retry(e)
    })
    // An error is followed by close, which retries.
  }

  retry() {
    const base = Math.min(MAX_DELAY, MIN_DELAY * 2 ** this.failures)
    const delay = Math.round(base * (0.75 + Math.random() * 0.5))
    this.failures++
    this.onState('retrying', delay)
    this.timer = setTimeout(() => this.connect(), delay)
  }
}
