/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.apache.bookkeeper.mledger.impl;

import static org.awaitility.Awaitility.await;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import com.sun.management.OperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.bookkeeper.client.AsyncCallback;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.client.PulsarMockLedgerHandle;
import org.apache.bookkeeper.common.util.OrderedExecutor;
import org.apache.bookkeeper.mledger.AsyncCallbacks;
import org.apache.bookkeeper.mledger.ManagedLedger;
import org.apache.bookkeeper.mledger.ManagedLedgerConfig;
import org.apache.bookkeeper.mledger.ManagedLedgerException;
import org.apache.bookkeeper.mledger.ManagedLedgerFactoryConfig;
import org.apache.bookkeeper.mledger.Position;
import org.apache.pulsar.common.api.proto.CommandSubscribe.InitialPosition;
import org.apache.pulsar.metadata.api.MetadataStoreException;
import org.apache.pulsar.metadata.impl.FaultInjectionMetadataStore;
import org.awaitility.core.ConditionTimeoutException;
import org.pulsarfork.bench.BenchGroups;
import org.testng.SkipException;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * The mark-delete rate limiter's write rate, and what throttled cursors cost at scale, on upstream's jar and
 * ours (docs/benchmark.md, "Limiter rate and cost at scale"). A long run, outside CI: {@code -Dlimiter.scale=true}
 * (README). Prints one {@code limiter-rate:} line per rate and kind of ack and one {@code limiter-scale:} line.
 *
 * <p>Writes are counted by the cursor's own counter of successful cursor-ledger writes
 * ({@code ManagedCursorMXBean#getPersistLedgerSucceed}, on all three lines; it follows a cursor-ledger switch),
 * cross-checked with the entries the mock bookie holds in the cursor ledger, plus the cursor's records put in the
 * metadata store (counted on the fault-injecting store): a close with no individually deleted ranges writes its
 * record there, not in the cursor ledger, and neither counter of the cursor counts it. The factory's periodic
 * flush is set to an hour: what is measured is the limiter's path (upstream's flush went through the limiter;
 * ours writes outside it, one write per dirty cursor and flush period, 60 s by default).
 */
public class LimiterRateAtScaleBenchTest extends CursorBenchBase {
    private static final String LINE = System.getProperty("pulsar.line", "?");
    private static final boolean OURS = !BenchGroups.onUpstream();
    private static final String JARS = OURS ? "ours" : "upstream";

    private static final double[] RATES = {0.1, 1.0, 10.0};
    private static final int ACKS_PER_SECOND = Integer.getInteger("limiter.rate.acksPerSecond", 50);
    // 6 periods at 0.1/s, 60 at 1/s, 600 at 10/s. The six cases run at once, each on its own ledger.
    private static final long RATE_WINDOW_SECONDS = Long.getLong("limiter.rate.seconds", 60);
    // Above the limiter's permits from the window's start to the close: the permit at the window's edge (the
    // first write took the one before the window; the limiter grants at the start of each period, so a span holds
    // floor(rate * span) + 1 grants at most), and the close's write of the latest state. No reset in this stream.
    // Plus the permits Guava's limiter stores while idle before the stream starts: at most one second's worth
    // (BURST_SECONDS), upstream's limiter too.
    private static final int RATE_ALLOWANCE = 2;
    private static final double BURST_SECONDS = 1.0;

    private static final int SCALE_LEDGERS = Integer.getInteger("limiter.scale.ledgers", 100);
    private static final int SCALE_CURSORS_PER_LEDGER = Integer.getInteger("limiter.scale.cursorsPerLedger", 100);
    private static final double SCALE_RATE = 1.0;
    private static final double SCALE_ACKS_PER_CURSOR = Double.parseDouble(
            System.getProperty("limiter.scale.acksPerCursor", "2"));
    private static final long SCALE_WARMUP_SECONDS = 5;
    private static final long SCALE_WINDOW_SECONDS = Long.getLong("limiter.scale.seconds", 30);
    private static final long SCALE_TICK_MILLIS = 10;
    private static final int CALIBRATION_ENTRIES = 50_000;

    // Ours only: the per-cursor flag of a scheduled write of held acks, and the held-ack count.
    private static final Field ACCEPTED_WRITE_SCHEDULED = fieldOrNull("acceptedWriteScheduled");
    private static final Method ACCEPTED_NOT_DURABLE_COUNT = methodOrNull("getAcceptedNotDurableCount");

    @BeforeClass(alwaysRun = true)
    public void onlyAsALongRun() {
        if (!Boolean.getBoolean("limiter.scale")) {
            throw new SkipException("a long run: -Dlimiter.scale=true (README)");
        }
    }

    @Override
    protected void initManagedLedgerFactoryConfig(ManagedLedgerFactoryConfig config) {
        super.initManagedLedgerFactoryConfig(config);
        config.setCursorPositionFlushSeconds(3600);
        // No entry cache: the entries the scale run adds before its cursors open are evicted as they are acked,
        // which would read as heap the cursors gave back.
        config.setMaxCacheSize(0);
    }

    @Override
    protected void setUpTestCase() throws Exception {
        super.setUpTestCase();
        // The mock bookie sleeps 1 ms in every add by default, on one thread: at 10,000 cursors that sleep, not
        // the cursor, would set the write rate (on 4.0.8 about 50 writes a second in all). testmocks 5.0.0-M1 has
        // setters for it; 4.0.8's takes the sleep from a queue of programmed delays, 1 ms when it is empty.
        try {
            for (String setter : new String[] {"setDefaultAddEntryDelayMillis", "setDefaultReadEntriesDelayMillis"}) {
                bkc.getClass().getMethod(setter, long.class).invoke(bkc, 0L);
            }
        } catch (NoSuchMethodException e) {
            Field delays = bkc.getClass().getDeclaredField("addEntryDelaysMillis");
            delays.setAccessible(true);
            delays.set(bkc, new ConcurrentLinkedQueue<Long>() {
                @Override
                public Long poll() {
                    Long programmed = super.poll();
                    return programmed != null ? programmed : 0L;
                }
            });
        }
    }

    /** One cursor, one limiter rate, one kind of ack: a steady stream and the writes it causes. */
    private final class RateCase {
        final double rate;
        final boolean individual;
        final ManagedCursorImpl cursor;
        final List<Position> p;
        final AtomicLong completed = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final CompletableFuture<Void> stopped = new CompletableFuture<>();
        final AsyncCallbacks.MarkDeleteCallback markDeleteCallback = new AsyncCallbacks.MarkDeleteCallback() {
            @Override
            public void markDeleteComplete(Object ctx) {
                completed.incrementAndGet();
            }

            @Override
            public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
                failed.incrementAndGet();
            }
        };
        final AsyncCallbacks.DeleteCallback deleteCallback = new AsyncCallbacks.DeleteCallback() {
            @Override
            public void deleteComplete(Object ctx) {
                completed.incrementAndGet();
            }

            @Override
            public void deleteFailed(ManagedLedgerException exception, Object ctx) {
                failed.incrementAndGet();
            }
        };
        // The ack thread's own: the next position and the acks sent (read once stopped completed).
        int next;
        long sent;
        Throwable tickFailure;
        ScheduledFuture<?> stream;
        long startNanos;
        long stopNanos;
        long closedNanos;
        long writesAtStart;
        long writesAtStop;
        long writesAfterClose;
        // The cursor's records put in the metadata store (its z-node), counted by the store.
        final LongAdder metadataPuts = new LongAdder();
        long metadataPutsAtStart;
        long metadataPutsAtStop;
        long metadataPutsAfterClose;
        long cursorLedgerAtStart;
        long entriesAtStart;
        long entriesAtStop;
        long cursorLedgerAtStop;
        Throwable closeFailure;

        RateCase(double rate, boolean individual) throws Exception {
            this.rate = rate;
            this.individual = individual;
            String name = "rate-" + kind() + "-" + rate;
            ManagedLedger ledger = factory.open(name, new ManagedLedgerConfig().setThrottleMarkDelete(rate));
            String cursorPath = "/" + name + "/c1";
            metadataStore.failConditional(new MetadataStoreException("never thrown"), (op, path) -> {
                if (op == FaultInjectionMetadataStore.OperationType.PUT && path.endsWith(cursorPath)) {
                    metadataPuts.increment();
                }
                return false;
            });
            this.cursor = (ManagedCursorImpl) ledger.openCursor("c1");
            int entries = (int) (ACKS_PER_SECOND * (RATE_WINDOW_SECONDS + 10)) + 10;
            this.p = openWithEntries(ledger, cursor, entries);
        }

        String kind() {
            return individual ? "delete" : "markDelete";
        }

        void start(ScheduledExecutorService acker) throws Exception {
            // The first write creates the cursor ledger and spends the limiter's first permit, just before the
            // window: a limiter left idle stores up to one second of permits (Guava's SmoothBursty), which an idle
            // cursor may spend at once, and the window would start with them.
            // Upstream's cursor-ledger creation can fail (the bug of managed-ledger patch 0013): try the next one.
            for (int attempt = 0; ; attempt++) {
                try {
                    markDeleteTakingThePermit(cursor, p.get(next), Map.of());
                    break;
                } catch (Exception e) {
                    if (attempt == 2) {
                        throw e;
                    }
                } finally {
                    next++;
                }
            }
            await().atMost(WAIT).until(() -> writesInFlight(cursor) == 0 && cursor.getCursorLedger() >= 0);
            metadataPutsAtStart = metadataPuts.sum();
            cursorLedgerAtStart = cursor.getCursorLedger();
            entriesAtStart = cursorLedgerEntries(cursor);
            writesAtStart = cursor.getStats().getPersistLedgerSucceed();
            startNanos = System.nanoTime();
            stream = acker.scheduleAtFixedRate(this::tick, 0, TimeUnit.SECONDS.toMicros(1) / ACKS_PER_SECOND,
                    TimeUnit.MICROSECONDS);
            acker.schedule(this::stop, RATE_WINDOW_SECONDS, TimeUnit.SECONDS);
        }

        private void tick() {
            if (stopped.isDone() || tickFailure != null || next >= p.size()) {
                return;
            }
            try {
                Position position = p.get(next++);
                if (individual) {
                    cursor.asyncDelete(position, deleteCallback, null);
                } else {
                    cursor.asyncMarkDelete(position, markDeleteCallback, null);
                }
                sent++;
            } catch (Throwable t) {
                // A periodic task that throws is cancelled silently: keep the failure for the report.
                tickFailure = t;
            }
        }

        // On the ack thread: no tick runs after it.
        private void stop() {
            stream.cancel(false);
            stopNanos = System.nanoTime();
            writesAtStop = cursor.getStats().getPersistLedgerSucceed();
            metadataPutsAtStop = metadataPuts.sum();
            cursorLedgerAtStop = cursor.getCursorLedger();
            entriesAtStop = cursorLedgerEntries(cursor);
            stopped.complete(null);
        }

        void close() {
            try {
                cursor.close();
            } catch (Exception e) {
                closeFailure = e;
            }
            try {
                await().atMost(WAIT).until(() -> completed.get() + failed.get() == sent
                        && writesInFlight(cursor) == 0);
            } catch (ConditionTimeoutException e) {
                // Reported below.
            }
            closedNanos = System.nanoTime();
            writesAfterClose = cursor.getStats().getPersistLedgerSucceed();
            metadataPutsAfterClose = metadataPuts.sum();
        }

        double windowSeconds() {
            return (stopNanos - startNanos) / 1e9;
        }

        // From the window's start to the close: a write after the stream stopped is still within the limiter.
        long bound() {
            return (long) Math.floor(rate * (closedNanos - startNanos) / 1e9 + 1e-9)
                    + (long) Math.ceil(rate * BURST_SECONDS) + RATE_ALLOWANCE;
        }

        // Cursor-ledger writes and metadata-store records of the cursor, from the window's start.
        long writesInWindow() {
            return writesAtStop - writesAtStart + metadataPutsAtStop - metadataPutsAtStart;
        }

        long writesWithClose() {
            return writesAfterClose - writesAtStart + metadataPutsAfterClose - metadataPutsAtStart;
        }

        String report() {
            double seconds = windowSeconds();
            long inWindow = writesInWindow();
            long total = writesWithClose();
            double perSecond = inWindow / seconds;
            // Entries the mock bookie holds, against the counter: a write completing after the stop differs by one.
            String ledgerEntries = cursorLedgerAtStop == cursorLedgerAtStart
                    ? String.valueOf(entriesAtStop - entriesAtStart) : "n/a (cursor ledger switched)";
            return String.format("limiter-rate: line=%s jars=%s ack=%s rate=%.1f/s acks=%d (%.1f/s) window=%.1f s"
                            + " writes/s=%.3f ratio=%.2f writes=%d (window %d: cursor ledger %d, metadata store %d;"
                            + " stop to close, %.1f s: cursor ledger %d, metadata store %d) bound=%d"
                            + " cursor-ledger-entries=%s completed=%d failed=%d%s",
                    LINE, JARS, kind(), rate, sent, sent / seconds, seconds, perSecond, perSecond / rate, total,
                    inWindow, writesAtStop - writesAtStart, metadataPutsAtStop - metadataPutsAtStart,
                    (closedNanos - stopNanos) / 1e9, writesAfterClose - writesAtStop,
                    metadataPutsAfterClose - metadataPutsAtStop, bound(), ledgerEntries, completed.get(), failed.get(),
                    (tickFailure != null ? " tick-failure=" + tickFailure : "")
                            + (closeFailure != null ? " close-failure=" + closeFailure : ""));
        }
    }

    /**
     * One cursor per limiter rate (0.1, 1 and 10 per second) and kind of ack (mark-deletes of consecutive
     * positions, individual deletes of consecutive positions), each under a steady stream of asynchronous acks
     * at 50 per second for 60 s, then closed. On ours the writes, close included, must stay within the limiter's
     * permits in the window (those it stores while idle included) plus {@link #RATE_ALLOWANCE}, and every ack
     * must complete.
     */
    @Test(timeOut = 600_000)
    public void cursorLedgerWritesStayWithinTheLimiterRate() throws Exception {
        List<RateCase> cases = new ArrayList<>();
        for (double rate : RATES) {
            cases.add(new RateCase(rate, false));
            cases.add(new RateCase(rate, true));
        }
        ScheduledExecutorService acker = Executors.newSingleThreadScheduledExecutor();
        try {
            for (RateCase c : cases) {
                c.start(acker);
            }
            CompletableFuture.allOf(cases.stream().map(c -> c.stopped).toArray(CompletableFuture[]::new))
                    .get(RATE_WINDOW_SECONDS + 60, TimeUnit.SECONDS);
        } finally {
            acker.shutdownNow();
        }
        for (RateCase c : cases) {
            c.close();
        }
        List<String> exceeded = new ArrayList<>();
        for (RateCase c : cases) {
            System.out.println(c.report());
            if (OURS) {
                if (c.writesWithClose() > c.bound()) {
                    exceeded.add(c.kind() + " at " + c.rate + "/s: " + c.writesWithClose() + " writes > " + c.bound());
                }
                assertEquals(c.failed.get(), 0L, c.kind() + " at " + c.rate + "/s: failed acks");
                assertEquals(c.completed.get(), c.sent, c.kind() + " at " + c.rate + "/s: every ack completes");
                assertTrue(c.tickFailure == null && c.closeFailure == null, c.report());
            }
        }
        assertEquals(exceeded, List.of(), "cursor-ledger writes above the limiter's permits plus " + RATE_ALLOWANCE);
    }

    /**
     * 10,000 durable cursors (100 ledgers of 100 cursors) under a 1/s limiter, each acking (mark-deletes of
     * consecutive positions) twice a second, so that about every other ack is throttled. Measured over 30 s after
     * 5 s of warm-up: cursor-ledger writes per second, process CPU time, the tasks pending on the managed-ledger
     * scheduler (and on ours the cursors with a scheduled write and the acks held), and the heap per cursor.
     */
    @Test(timeOut = 600_000)
    public void tenThousandThrottledCursors() throws Exception {
        ScaleRun run = new ScaleRun();
        run.openLedgers();
        run.heapBefore = usedHeapAfterGc();
        run.openCursorsAndWriteOnce();
        run.measureAtRest();

        run.prepareAckStream();
        ScheduledExecutorService acker = Executors.newSingleThreadScheduledExecutor();
        ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor();
        Window window = new Window(run.cursors, run.acksSent);
        try {
            acker.scheduleAtFixedRate(run::ackNextSlice, 0, SCALE_TICK_MILLIS, TimeUnit.MILLISECONDS);
            sampler.scheduleAtFixedRate(window::sample, SCALE_WARMUP_SECONDS, 1, TimeUnit.SECONDS);
            window.done.get(SCALE_WARMUP_SECONDS + SCALE_WINDOW_SECONDS + 120, TimeUnit.SECONDS);
            sampler.shutdownNow();
            // Under load: the stream runs, acks are held and writes scheduled.
            long heapUnderAcks = usedHeapAfterGc();
            long entriesUnderAcks = cursorLedgerEntries(run.cursors);
            acker.shutdownNow();
            assertTrue(acker.awaitTermination(10, TimeUnit.SECONDS));
            run.printReport(window, heapUnderAcks, entriesUnderAcks);
            if (OURS) {
                assertEquals(run.firstWrites, "all", "every cursor's first write completes");
                assertEquals(run.acksFailed.sum(), 0L, "no ack fails");
            }
        } finally {
            acker.shutdownNow();
            sampler.shutdownNow();
            closeAll(run.ledgers);
        }
    }

    /** The scale run's ledgers and cursors, its ack stream, and what it measured before the window. */
    private final class ScaleRun {
        final int n = SCALE_LEDGERS * SCALE_CURSORS_PER_LEDGER;
        final List<ManagedLedger> ledgers = new ArrayList<>();
        final List<List<Position>> positions = new ArrayList<>();
        final LongAdder acksCompleted = new LongAdder();
        final LongAdder acksFailed = new LongAdder();
        final LongAdder acksSent = new LongAdder();
        final AsyncCallbacks.MarkDeleteCallback callback = new AsyncCallbacks.MarkDeleteCallback() {
            @Override
            public void markDeleteComplete(Object ctx) {
                acksCompleted.increment();
            }

            @Override
            public void markDeleteFailed(ManagedLedgerException exception, Object ctx) {
                acksFailed.increment();
            }
        };
        ManagedCursorImpl[] cursors;
        long heapBefore;
        String firstWrites = "all";
        long firstFailed;
        double openSeconds;
        long heapAtRest;
        long entriesAtRest;
        double mockBytesPerEntry;
        // The ack thread's own: each cursor's next position, and the ticks so far.
        int[] next;
        int perTick;
        long tick;

        void openLedgers() throws Exception {
            int entries = (int) Math.ceil(SCALE_ACKS_PER_CURSOR * (SCALE_WARMUP_SECONDS + SCALE_WINDOW_SECONDS + 30))
                    + 2;
            for (int l = 0; l < SCALE_LEDGERS; l++) {
                ManagedLedger ledger = factory.open("scale-" + l,
                        new ManagedLedgerConfig().setThrottleMarkDelete(SCALE_RATE));
                ledgers.add(ledger);
                List<Position> p = new ArrayList<>();
                for (int i = 0; i < entries; i++) {
                    p.add(ledger.addEntry(("entry-" + i).getBytes()));
                }
                positions.add(p);
            }
        }

        void openCursorsAndWriteOnce() throws Exception {
            long openStart = System.nanoTime();
            cursors = new ManagedCursorImpl[n];
            for (int i = 0; i < n; i++) {
                cursors[i] = (ManagedCursorImpl) ledgers.get(i / SCALE_CURSORS_PER_LEDGER)
                        .openCursor("c" + (i % SCALE_CURSORS_PER_LEDGER), InitialPosition.Earliest);
            }
            // The first write of each cursor creates its cursor ledger and spends the limiter's first permit.
            for (int i = 0; i < n; i++) {
                cursors[i].asyncMarkDelete(positions.get(i / SCALE_CURSORS_PER_LEDGER).get(0), callback, null);
            }
            try {
                await().atMost(Duration.ofMinutes(2)).until(() -> acksCompleted.sum() + acksFailed.sum() == n
                        && totalWritesInFlight(cursors) == 0);
            } catch (ConditionTimeoutException e) {
                // Upstream's cursor-ledger creation can fail or hang (the bug of managed-ledger patch 0013).
                firstWrites = (acksCompleted.sum() + acksFailed.sum()) + " of " + n;
            }
            firstFailed = acksFailed.sum();
            openSeconds = (System.nanoTime() - openStart) / 1e9;
        }

        void measureAtRest() throws Exception {
            heapAtRest = usedHeapAfterGc();
            entriesAtRest = cursorLedgerEntries(cursors);
            long bytesAtRest = cursorLedgerBytes(cursors);
            int recordBytes = (int) Math.max(1, bytesAtRest / Math.max(1, entriesAtRest));
            mockBytesPerEntry = mockBookieBytesPerEntry(recordBytes);
        }

        void prepareAckStream() {
            next = new int[n];
            Arrays.fill(next, 1);
            perTick = (int) Math.max(1, Math.round(n * SCALE_ACKS_PER_CURSOR * SCALE_TICK_MILLIS / 1000.0));
        }

        // The ack stream: every tick acks the next slice of cursors, each cursor at SCALE_ACKS_PER_CURSOR a second.
        void ackNextSlice() {
            int first = (int) ((tick++ * perTick) % n);
            for (int k = 0; k < perTick; k++) {
                int i = (first + k) % n;
                List<Position> p = positions.get(i / SCALE_CURSORS_PER_LEDGER);
                if (next[i] < p.size()) {
                    cursors[i].asyncMarkDelete(p.get(next[i]++), callback, null);
                    acksSent.increment();
                }
            }
        }

        void printReport(Window window, long heapUnderAcks, long entriesUnderAcks) {
            double seconds = (window.endNanos - window.startNanos) / 1e9;
            double writesPerSecond = (window.writesAtEnd - window.writesAtStart) / seconds;
            double cpuSeconds = (window.cpuAtEnd - window.cpuAtStart) / 1e9;
            double restPerCursor = (heapAtRest - heapBefore) / (double) n;
            double mockGrowth = (entriesUnderAcks - entriesAtRest) * mockBytesPerEntry;
            double loadPerCursor = (heapUnderAcks - heapBefore - mockGrowth) / n;
            System.out.printf("limiter-scale: line=%s jars=%s cursors=%d (%d ledgers x %d) rate=%.1f/s"
                            + " acks/s=%.0f window=%.1f s writes/s=%.0f (%.3f per cursor, ratio %.2f)"
                            + " cpu=%.1f s (%.2f cores) heap/cursor at rest=%.0f B, under acks=%.0f B"
                            + " (mock bookie: %d cursor-ledger entries at %.0f B each left out)"
                            + " scheduler-tasks mean=%.0f max=%d scheduled-writes mean=%s held-acks mean=%s"
                            + " first-writes=%s (%d failed, open and first write %.1f s) acks-failed=%d%n",
                    LINE, JARS, n, SCALE_LEDGERS, SCALE_CURSORS_PER_LEDGER, SCALE_RATE,
                    (window.acksAtEnd - window.acksAtStart) / seconds, seconds, writesPerSecond,
                    writesPerSecond / n, writesPerSecond / n / SCALE_RATE, cpuSeconds, cpuSeconds / seconds,
                    restPerCursor, loadPerCursor, entriesUnderAcks - entriesAtRest, mockBytesPerEntry,
                    window.queued.mean(), window.queued.max, window.scheduled.meanOrNa(), window.held.meanOrNa(),
                    firstWrites, firstFailed, openSeconds, acksFailed.sum() - firstFailed);
        }
    }

    /** The measured window of the scale run, sampled once a second on the sampler thread. */
    private final class Window {
        final ManagedCursorImpl[] cursors;
        final LongAdder acksSent;
        final CompletableFuture<Void> done = new CompletableFuture<>();
        final Samples queued = new Samples();
        final Samples scheduled = new Samples();
        final Samples held = new Samples();
        long samples;
        long startNanos;
        long endNanos;
        long cpuAtStart;
        long cpuAtEnd;
        long writesAtStart;
        long writesAtEnd;
        long acksAtStart;
        long acksAtEnd;

        Window(ManagedCursorImpl[] cursors, LongAdder acksSent) {
            this.cursors = cursors;
            this.acksSent = acksSent;
        }

        void sample() {
            try {
                if (done.isDone()) {
                    return;
                }
                if (samples++ == 0) {
                    startNanos = System.nanoTime();
                    cpuAtStart = processCpuNanos();
                    writesAtStart = totalWrites(cursors);
                    acksAtStart = acksSent.sum();
                    return;
                }
                queued.add(scheduledTasks(factory.getScheduledExecutor()));
                if (ACCEPTED_WRITE_SCHEDULED != null) {
                    long count = 0;
                    for (ManagedCursorImpl c : cursors) {
                        if (ACCEPTED_WRITE_SCHEDULED.getBoolean(c)) {
                            count++;
                        }
                    }
                    scheduled.add(count);
                }
                if (ACCEPTED_NOT_DURABLE_COUNT != null) {
                    long count = 0;
                    for (ManagedCursorImpl c : cursors) {
                        count += (int) ACCEPTED_NOT_DURABLE_COUNT.invoke(c);
                    }
                    held.add(count);
                }
                if (samples > SCALE_WINDOW_SECONDS) {
                    endNanos = System.nanoTime();
                    cpuAtEnd = processCpuNanos();
                    writesAtEnd = totalWrites(cursors);
                    acksAtEnd = acksSent.sum();
                    done.complete(null);
                }
            } catch (Throwable t) {
                done.completeExceptionally(t);
            }
        }
    }

    private static final class Samples {
        long count;
        long sum;
        long max;

        void add(long value) {
            count++;
            sum += value;
            max = Math.max(max, value);
        }

        double mean() {
            return count == 0 ? Double.NaN : sum / (double) count;
        }

        String meanOrNa() {
            return count == 0 ? "n/a" : String.format("%.0f", mean());
        }
    }

    /**
     * Heap the mock bookie keeps per stored entry of the given size, across full GCs: the cursor-ledger entries it
     * accumulates under load are the mock's, not the cursor's (a real bookie keeps them on its own disks).
     */
    private double mockBookieBytesPerEntry(int entryBytes) throws Exception {
        long before = usedHeapAfterGc();
        LedgerHandle lh = bkc.createLedger(1, 1, 1, BookKeeper.DigestType.CRC32C, new byte[0]);
        CompletableFuture<Void> added = new CompletableFuture<>();
        AtomicLong pending = new AtomicLong(CALIBRATION_ENTRIES);
        AsyncCallback.AddCallback callback = (rc, handle, entryId, ctx) -> {
            if (rc != BKException.Code.OK) {
                added.completeExceptionally(BKException.create(rc));
            } else if (pending.decrementAndGet() == 0) {
                added.complete(null);
            }
        };
        for (int i = 0; i < CALIBRATION_ENTRIES; i++) {
            lh.asyncAddEntry(new byte[entryBytes], callback, null);
        }
        added.get(60, TimeUnit.SECONDS);
        long after = usedHeapAfterGc();
        bkc.deleteLedger(lh.getId());
        return (after - before) / (double) CALIBRATION_ENTRIES;
    }

    private void closeAll(List<ManagedLedger> ledgers) {
        List<CompletableFuture<Void>> closed = new ArrayList<>();
        for (ManagedLedger ledger : ledgers) {
            CompletableFuture<Void> f = new CompletableFuture<>();
            ledger.asyncClose(new AsyncCallbacks.CloseCallback() {
                @Override
                public void closeComplete(Object ctx) {
                    f.complete(null);
                }

                @Override
                public void closeFailed(ManagedLedgerException exception, Object ctx) {
                    f.complete(null);
                }
            }, null);
            closed.add(f);
        }
        try {
            CompletableFuture.allOf(closed.toArray(CompletableFuture[]::new)).get(2, TimeUnit.MINUTES);
        } catch (Exception e) {
            System.out.println("limiter-scale: closing the ledgers did not finish: " + e);
        }
    }

    private long cursorLedgerEntries(ManagedCursorImpl cursor) {
        PulsarMockLedgerHandle lh = bkc.getLedgerMap().get(cursor.getCursorLedger());
        return lh == null ? 0 : lh.getLastAddConfirmed() + 1;
    }

    private long cursorLedgerEntries(ManagedCursorImpl[] cursors) {
        long total = 0;
        for (ManagedCursorImpl c : cursors) {
            total += cursorLedgerEntries(c);
        }
        return total;
    }

    private long cursorLedgerBytes(ManagedCursorImpl[] cursors) {
        long total = 0;
        for (ManagedCursorImpl c : cursors) {
            PulsarMockLedgerHandle lh = bkc.getLedgerMap().get(c.getCursorLedger());
            total += lh == null ? 0 : lh.getLength();
        }
        return total;
    }

    private static long totalWrites(ManagedCursorImpl[] cursors) {
        long total = 0;
        for (ManagedCursorImpl c : cursors) {
            total += c.getStats().getPersistLedgerSucceed();
        }
        return total;
    }

    private static long totalWritesInFlight(ManagedCursorImpl[] cursors) throws Exception {
        long total = 0;
        for (ManagedCursorImpl c : cursors) {
            total += writesInFlight(c);
        }
        return total;
    }

    private static long processCpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static long usedHeapAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /**
     * Tasks queued on the managed-ledger scheduler's threads, delayed ones included (the timers), cancelled ones
     * left out (the scheduler keeps a cancelled task queued until its time: each cursor-ledger creation leaves
     * its cancelled 60 s timeout there). Each thread is a ScheduledThreadPoolExecutor behind BookKeeper's and
     * Guava's wrappers, found by reflection. -1 when not found.
     */
    private static long scheduledTasks(OrderedExecutor scheduler) throws Exception {
        Field threads = OrderedExecutor.class.getDeclaredField("threads");
        threads.setAccessible(true);
        long total = 0;
        for (ExecutorService thread : (ExecutorService[]) threads.get(scheduler)) {
            ThreadPoolExecutor pool = findPool(thread);
            if (pool == null) {
                return -1;
            }
            for (Object task : pool.getQueue().toArray()) {
                if (!(task instanceof Future) || !((Future<?>) task).isCancelled()) {
                    total++;
                }
            }
        }
        return total;
    }

    private static ThreadPoolExecutor findPool(Object root) throws IllegalAccessException {
        Deque<Object> todo = new ArrayDeque<>();
        Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        todo.add(root);
        while (!todo.isEmpty()) {
            Object o = todo.poll();
            if (o instanceof ThreadPoolExecutor) {
                return (ThreadPoolExecutor) o;
            }
            if (!seen.add(o) || seen.size() > 50) {
                continue;
            }
            String name = o.getClass().getName();
            if (!name.startsWith("org.apache.bookkeeper.") && !name.startsWith("com.google.common.")) {
                continue;
            }
            for (Class<?> c = o.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
                for (Field f : c.getDeclaredFields()) {
                    if (f.getType().isPrimitive() || Modifier.isStatic(f.getModifiers())) {
                        continue;
                    }
                    f.setAccessible(true);
                    Object value = f.get(o);
                    if (value != null) {
                        todo.add(value);
                    }
                }
            }
        }
        return null;
    }

    private static Field fieldOrNull(String name) {
        try {
            Field f = ManagedCursorImpl.class.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (NoSuchFieldException e) {
            return null;
        }
    }

    private static Method methodOrNull(String name) {
        try {
            return ManagedCursorImpl.class.getMethod(name);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }
}
