"""The Lua scripts of the Redis frontier. Each runs atomically inside Redis, on the keys of one
hash slot (:mod:`.keyspace`), so the same scripts run on one Redis and on a Redis Cluster.

Keys of one partition, under its tag ``T`` = ``{P:<part>}`` (KEYS[1] of each script is ``T:ready``,
which routes the call; the script reaches the partition's other keys by the tag in ARGV[1]):

* ``T:q:<key>:<level>``   list: one politeness key's queue at one priority level, items ``fp entry``: the
  URL's 8-byte fingerprint, then the entry (:mod:`.entries`: lean, or a pickle)
* ``T:ready``             sorted set: the partition's keys waiting, scored by when due (ms)
* ``T:lease``             sorted set: keys in flight, scored by lease expiry (ms);
  ``T:lease_owner``       hash key -> worker
* ``T:na:<key>``          when ``key`` may go again (ms), kept until then (PX)
* ``T:pending:<worker>``  hash fp -> ``key<TAB>level<TAB>entry``: handed to a worker, not yet stored
* ``T:workers``           sorted set worker -> when it last took work here (ms)
* ``T:group``             hash key -> its server's address (the per-IP limits, kept in ``{P:g:<address>}``)
* ``T:queued``, ``T:inflight``  counters
* ``T:seen:<i>``          bitmaps: the URL-seen Bloom filters of the partition's hosts, a chain that
  grows (``T:seen`` hash: ``filters``, and ``count`` in the newest), as the local one does

Meta keys, under ``M`` = ``{P}``: ``M:workers`` sorted set worker -> heartbeat expiry;
``M:owner:<part>`` the worker leasing partition ``part`` (PX).

Per server address, under ``G`` = ``{P:g:<address>}``: ``G:flight`` sorted set key -> lease expiry
(the keys of that server in flight, from any worker), ``G:next`` when it may get the next one (PX).
"""

# The URL-seen Bloom filters of one partition: a chain, filter i for c0 * 2^i URLs at error
# err / 2^(i+1) (a scalable Bloom filter, as crawlproj.frontier.urlseen.GrowingBloom), so a
# partition's bits grow with its URLs and no bitmap passes Redis's 2^32 bits. h1, h2: two
# 32-bit hashes of the URL; bit j of a filter of m bits is (h1 + j * h2) mod m, exact in Lua's
# doubles (< 2^38), corrected where the float division rounds the quotient up.
_BLOOM = """
local function bloom_shape(c, e)
  local bits = math.min(math.ceil(-c * math.log(e) / (math.log(2) ^ 2)), 4294967295)
  return bits, math.max(1, math.floor(bits / c * math.log(2) + 0.5))
end
local function bloom_bits(key, c, e, h1, h2, op)
  local bits, k = bloom_shape(c, e)
  local args = {key}
  for j = 0, k - 1 do
    local x = h1 + j * h2
    local off = x - math.floor(x / bits) * bits
    if off < 0 then off = off + bits elseif off >= bits then off = off - bits end
    args[#args + 1] = op; args[#args + 1] = 'u1'; args[#args + 1] = off
    if op == 'SET' then args[#args + 1] = 1 end
  end
  for _, b in ipairs(redis.call(op == 'SET' and 'BITFIELD' or 'BITFIELD_RO', unpack(args))) do
    if b == 0 then return false end
  end
  return true
end
-- seen_check: whether every filter of the chain has the URL. seen_add: add it to the newest
-- filter; true if it was new.
local function seen_check(t, c0, e, h1, h2)
  local n = tonumber(redis.call('HGET', t..':seen', 'filters') or 1)
  for i = 0, n - 1 do
    if bloom_bits(t..':seen:'..i, c0 * 2 ^ i, e / 2 ^ (i + 1), h1, h2, 'GET') then return true end
  end
  return false
end
local function seen_add(t, c0, e, h1, h2)
  local n = tonumber(redis.call('HGET', t..':seen', 'filters') or 1)
  for i = 0, n - 2 do
    if bloom_bits(t..':seen:'..i, c0 * 2 ^ i, e / 2 ^ (i + 1), h1, h2, 'GET') then return false end
  end
  local c = c0 * 2 ^ (n - 1)
  if bloom_bits(t..':seen:'..(n - 1), c, e / 2 ^ n, h1, h2, 'SET') then return false end
  if redis.call('HINCRBY', t..':seen', 'count', 1) >= c then
    redis.call('HSET', t..':seen', 'filters', n + 1, 'count', 0)
  end
  return true
end
"""

# KEYS[1]: T:ready. ARGV: T, now_ms, worker, c0, err, then per entry 7 values: key, level, item,
# bloom tag ('' when the entry skips the URL-seen test), h1, h2, group ('' for none).
# With a bloom tag, the URL is marked seen here, with its push: a worker killed between its
# URL-seen test and the push must not leave a URL marked seen and never queued. The bloom tag
# is T itself unless the politeness key is the IP address (then one Redis only, see
# crawlproj.checks). Returns how many entries were queued.
PUSH = _BLOOM + """
local t, now, me = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local c0, err = tonumber(ARGV[4]), tonumber(ARGV[5])
local queued = 0
for i = 6, #ARGV, 7 do
  local key, item, bloom = ARGV[i], ARGV[i + 2], ARGV[i + 3]
  if bloom == '' or seen_add(bloom, c0, err, tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5])) then
    redis.call('RPUSH', t..':q:'..key..':'..ARGV[i + 1], item)
    queued = queued + 1
    if ARGV[i + 6] ~= '' then redis.call('HSET', t..':group', key, ARGV[i + 6]) end
    -- An entry this worker holds, sent back (a retry, a render, a robots.txt visit first): the
    -- queue holds it again, so its pending record goes; whichever worker takes it records it anew.
    if redis.call('HDEL', t..':pending:'..me, string.sub(item, 1, 8)) == 1 then
      redis.call('DECR', t..':inflight')
    end
    if not redis.call('ZSCORE', t..':lease', key) then
      local na = tonumber(redis.call('GET', t..':na:'..key) or now)
      redis.call('ZADD', t..':ready', 'NX', math.max(na, now), key)
    end
  end
end
if queued > 0 then redis.call('INCRBY', t..':queued', queued) end
return queued
"""

# KEYS[1]: T:ready. ARGV: T, c0, err, h1, h2. 1 if the URL is (probably) seen.
SEEN = _BLOOM + """
return seen_check(ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])) and 1 or 0
"""

# KEYS[1]: the first partition's T:ready. ARGV: now_ms, max, worker, lease_ms, levels, T...
# Leases up to max due keys to the worker, in all, from the partitions in turn, each with its
# first entry by level. Several partitions in one call on one Redis only (a cluster gets one
# call per partition). Returns {key1, fp1, entry1, group1, partition index1, key2, ...} (group ''
# when none), and for each partition the earliest due time left there ('' when not looked at,
# false when nothing is waiting).
POP = """
local now, max, me = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local ttl, levels = tonumber(ARGV[4]), tonumber(ARGV[5])
local out, dues, n = {}, {}, 0
for p = 6, #ARGV do
  local t, nextdue = ARGV[p], false
  if n >= max then
    dues[#dues + 1] = ''
  else
    -- the earliest keys with their due times, in one command: the due ones are taken, the
    -- first one not due tells when to look again
    local first = redis.call('ZRANGE', t..':ready', 0, max - n, 'WITHSCORES')
    local took = 0
    for j = 1, #first, 2 do
      local key, score = first[j], tonumber(first[j + 1])
      if score > now or n >= max then
        nextdue = score
        break
      end
      redis.call('ZREM', t..':ready', key)
      local item, level = false, 0
      for l = 0, levels - 1 do
        item = redis.call('LPOP', t..':q:'..key..':'..l)
        if item then level = l; break end
      end
      if item then
        redis.call('ZADD', t..':lease', now + ttl, key)
        redis.call('HSET', t..':lease_owner', key, me)
        local fp, entry = string.sub(item, 1, 8), string.sub(item, 9)
        -- a retry has its first attempt's fingerprint: one pending entry, counted once
        local added = redis.call('HSET', t..':pending:'..me, fp, key..'\\t'..level..'\\t'..entry)
        redis.call('DECR', t..':queued')
        redis.call('INCRBY', t..':inflight', added)
        out[#out + 1] = key; out[#out + 1] = fp; out[#out + 1] = entry
        out[#out + 1] = redis.call('HGET', t..':group', key) or ''
        out[#out + 1] = tostring(score)
        out[#out + 1] = p - 6
        n = n + 1
        took = took + 1
      end
    end
    if took > 0 then redis.call('ZADD', t..':workers', now, me) end
    dues[#dues + 1] = nextdue and tostring(nextdue) or false
  end
end
return {out, dues}
"""

# Puts a key's queue back in the ready set if it has entries and no lease. Shared by scripts.
_READY = """
local function ready(t, key, at, levels)
  if redis.call('ZSCORE', t..':lease', key) then return end
  for l = 0, levels - 1 do
    if redis.call('LLEN', t..':q:'..key..':'..l) > 0 then
      local na = tonumber(redis.call('GET', t..':na:'..key) or at)
      redis.call('ZADD', t..':ready', math.max(na, at), key)
      return
    end
  end
end
local function unlease(t, key)
  redis.call('ZREM', t..':lease', key)
  redis.call('HDEL', t..':lease_owner', key)
end
-- a pending record back to the head of its queue; returns its key
local function requeue(t, fp, v)
  local t1 = string.find(v, '\\t', 1, true)
  local t2 = string.find(v, '\\t', t1 + 1, true)
  local key = string.sub(v, 1, t1 - 1)
  redis.call('LPUSH', t..':q:'..key..':'..string.sub(v, t1 + 1, t2 - 1), fp..string.sub(v, t2 + 1))
  return key
end
"""

# KEYS[1]: T:ready. ARGV: T, worker, levels, then pairs fp, at_ms.
# Entries just popped that their server's per-IP limit refuses: back to the head of their
# queues, their keys unleased and due again at their at_ms. Returns how many went back.
UNPOP = _READY + """
local t, me, levels = ARGV[1], ARGV[2], tonumber(ARGV[3])
local back = 0
for i = 4, #ARGV, 2 do
  local v = redis.call('HGET', t..':pending:'..me, ARGV[i])
  if v then
    local key = requeue(t, ARGV[i], v)
    redis.call('HDEL', t..':pending:'..me, ARGV[i])
    unlease(t, key)
    ready(t, key, tonumber(ARGV[i + 1]), levels)
    back = back + 1
  end
end
if back > 0 then
  redis.call('INCRBY', t..':queued', back)
  redis.call('DECRBY', t..':inflight', back)
end
return back
"""

# KEYS[1]: T:ready. ARGV: T, key, at_ms, now_ms, levels. The key's fetch is over: it may go
# again at at_ms (or its stored next-allowed time, if later).
RELEASE = _READY + """
local t, key, at, now = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
unlease(t, key)
local na = tonumber(redis.call('GET', t..':na:'..key) or 0)
if na > at then at = na end
if at > now then redis.call('SET', t..':na:'..key, at, 'PX', math.ceil(at - now) + 1) end
ready(t, key, at, tonumber(ARGV[5]))
return 1
"""

# KEYS[1]: T:ready. ARGV: T, key, until_ms, now_ms
DEFER = """
local t, key, untl, now = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local na = tonumber(redis.call('GET', t..':na:'..key) or 0)
if untl > na and untl > now then redis.call('SET', t..':na:'..key, untl, 'PX', math.ceil(untl - now) + 1) end
redis.call('ZADD', KEYS[1], 'XX', 'GT', untl, key)
return 1
"""

# KEYS[1]: T:ready. ARGV: T, worker, fp...
COMPLETE = """
local t = ARGV[1]
local n = 0
for i = 3, #ARGV do n = n + redis.call('HDEL', t..':pending:'..ARGV[2], ARGV[i]) end
if n > 0 then redis.call('DECRBY', t..':inflight', n) end
return n
"""

# KEYS[1]: M:workers. ARGV: M, worker, now_ms, worker_ttl_ms, partition_ttl_ms, partitions
# Renews the worker, frees the partitions of workers whose heartbeat stopped, then holds
# ceil(partitions / live workers) partitions: gives back extras, claims free ones. Returns
# {partitions held, live workers}.
HEARTBEAT = """
local m, me, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local wttl, pttl, parts = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
redis.call('ZADD', KEYS[1], now + wttl, me)
local dead = {}
for _, w in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '('..now)) do dead[w] = true end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '('..now)
local live = redis.call('ZRANGE', KEYS[1], 0, -1)
local target = math.ceil(parts / math.max(#live, 1))
local owned = {}
for i = 0, parts - 1 do
  local owner = redis.call('GET', m..':owner:'..i)
  if owner == me then owned[#owned + 1] = i
  elseif owner and dead[owner] then redis.call('DEL', m..':owner:'..i) end
end
while #owned > target do
  redis.call('DEL', m..':owner:'..table.remove(owned))
end
for _, i in ipairs(owned) do redis.call('PEXPIRE', m..':owner:'..i, pttl) end
for i = 0, parts - 1 do
  if #owned >= target then break end
  if redis.call('SET', m..':owner:'..i, me, 'NX', 'PX', pttl) then owned[#owned + 1] = i end
end
return {owned, live}
"""

# KEYS[1]: T:ready. ARGV: T, now_ms, levels, live_at_ms, leaving worker or '', live worker...
# The live workers are the heartbeat's list, read at live_at_ms. A worker is dead here when it
# is not on it and took no work here since (a worker newer than the list has), or it is
# leaving: its pending entries go back to the head of their queues and its keys are
# unleased. Leases past expiry are released too. The counters are put right (a write lost to
# a failover must not hold the crawl open). Returns {entries put back, leases expired,
# {key, group, ...} unleased, whose per-IP counts the caller ends}.
REAP = _READY + """
local t, now, levels, live_at, leaving = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local live = {}
for i = 6, #ARGV do live[ARGV[i]] = true end
local dead, back, touched, freed = {}, 0, {}, {}
local workers = redis.call('ZRANGE', t..':workers', 0, -1, 'WITHSCORES')
for i = 1, #workers, 2 do
  local w = workers[i]
  if w == leaving or (not live[w] and tonumber(workers[i + 1]) < live_at) then dead[w] = true end
end
if leaving ~= '' then dead[leaving] = true end
for w in pairs(dead) do
  local pending = redis.call('HGETALL', t..':pending:'..w)
  for i = 1, #pending, 2 do
    touched[requeue(t, pending[i], pending[i + 1])] = true
    back = back + 1
  end
  redis.call('DEL', t..':pending:'..w)
  redis.call('ZREM', t..':workers', w)
end
if back > 0 then redis.call('INCRBY', t..':queued', back) end
local function free(key)
  unlease(t, key)
  touched[key] = true
  freed[#freed + 1] = key; freed[#freed + 1] = redis.call('HGET', t..':group', key) or ''
end
local owners = redis.call('HGETALL', t..':lease_owner')
for i = 1, #owners, 2 do
  if dead[owners[i + 1]] then free(owners[i]) end
end
local expired = redis.call('ZRANGEBYSCORE', t..':lease', '-inf', '('..now)
for _, key in ipairs(expired) do free(key) end
for key in pairs(touched) do ready(t, key, now, levels) end
local inflight = 0
workers = redis.call('ZRANGE', t..':workers', 0, -1)
for _, w in ipairs(workers) do inflight = inflight + redis.call('HLEN', t..':pending:'..w) end
redis.call('SET', t..':inflight', inflight)
if redis.call('ZCARD', t..':ready') == 0 and redis.call('ZCARD', t..':lease') == 0 then
  redis.call('SET', t..':queued', 0)
end
return {back, #expired, freed}
"""

# KEYS[1]: G:flight. ARGV: G, key, now_ms, lease_ms, cap, gap_ms, retry_ms
# The per-IP limits of one server, across workers: at most cap of its keys in flight, one
# handed out every gap_ms. Returns 0 when ``key`` may go (it is counted), else when to ask again
# (ms). Entries past their lease expire, so a worker that dies holding one blocks nothing for long.
GROUP_TAKE = """
local g, key, now, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local cap, gap, retry = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
if cap > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '('..now)
  if not redis.call('ZSCORE', KEYS[1], key) and redis.call('ZCARD', KEYS[1]) >= cap then return now + retry end
end
if gap > 0 then
  local slot = tonumber(redis.call('GET', g..':next') or 0)
  if slot > now then return slot end
  redis.call('SET', g..':next', now + gap, 'PX', math.ceil(gap) + 1000)
end
if cap > 0 then redis.call('ZADD', KEYS[1], now + ttl, key) end
return 0
"""

# KEYS[1]: G:flight. ARGV: G, slot_ms. A key whose request never reached its server (robots.txt,
# address safety) gives back the rate slot GROUP_TAKE handed it (the server's next slot was set
# to slot_ms then), unless another key has taken a later one since: that one stands.
GROUP_REFUND = """
if tonumber(redis.call('GET', ARGV[1]..':next') or 0) == tonumber(ARGV[2]) then
  return redis.call('DEL', ARGV[1]..':next')
end
return 0
"""

# KEYS[1]: G:flight. ARGV: key. A key of this server is no longer in flight.
GROUP_DONE = """
return redis.call('ZREM', KEYS[1], ARGV[1])
"""

# KEYS[1]: M:workers. ARGV: M, worker, partition... A worker leaving: its partitions are free at once.
LEAVE = """
for i = 3, #ARGV do
  if redis.call('GET', ARGV[1]..':owner:'..ARGV[i]) == ARGV[2] then redis.call('DEL', ARGV[1]..':owner:'..ARGV[i]) end
end
return redis.call('ZREM', KEYS[1], ARGV[2])
"""
