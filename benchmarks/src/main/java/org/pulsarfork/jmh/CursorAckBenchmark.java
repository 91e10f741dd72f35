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
package org.pulsarfork.jmh;

import java.io.File;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Time per ack (single-shot batches) of the upstream managed-ledger jar and ours, in one run, on the same mock
 * BookKeeper workload: individual acks and mark-deletes, with and without a read in flight (which
 * makes acks queue). Each jar runs in its own class loader; the workload class is compiled once
 * against the upstream API and linked against each jar. Secondary results count cursor-ledger
 * writes and acks, for writes per 10,000 acks.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(1)
@Warmup(iterations = 150)
@Measurement(iterations = 100)
public class CursorAckBenchmark {
    // One measured call acks a whole batch; the ledger it acks is prepared outside the measurement.
    static final int BATCH = 2_000;

    @Param({"upstream", "ours"})
    public String jar;

    @Param({"individual", "markDelete"})
    public String kind;

    @Param({"false", "true"})
    public boolean readInFlight;

    private Object workload;
    private Method prepare;
    private Method ackAll;
    private Method close;
    private Method submitNanos;
    private Method settleNanos;

    /** Cursor-ledger writes and acks, per iteration. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Counters {
        public long cursorLedgerWrites;
        public long acks;
        // Microseconds submitting the batch, and from then until every callback fired.
        public long submitMicros;
        public long settleMicros;
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        String path = System.getProperty("benchmark.cp." + jar);
        if (path == null) {
            throw new IllegalStateException("-Dbenchmark.cp." + jar + " is not set (bin/run-benchmark sets it)");
        }
        List<URL> urls = new ArrayList<>();
        for (String entry : path.split(File.pathSeparator)) {
            urls.add(new File(entry).toURI().toURL());
        }
        // Parent: the platform loader, so that only JDK classes are shared between the two jars.
        ClassLoader loader = new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
        Class<?> type = loader.loadClass("org.pulsarfork.workload.CursorAckWorkload");
        Constructor<?> constructor = type.getConstructor(String.class, boolean.class, int.class);
        workload = constructor.newInstance(kind, readInFlight, BATCH);
        prepare = type.getMethod("prepare");
        ackAll = type.getMethod("ackAll");
        close = type.getMethod("close");
        submitNanos = type.getMethod("submitNanos");
        settleNanos = type.getMethod("settleNanos");
    }

    @Setup(Level.Iteration)
    public void freshLedger() throws Exception {
        prepare.invoke(workload);
        // A batch takes a few milliseconds: a GC pause for the garbage of preparing it, when it fell inside the
        // measured batch, made that batch up to twenty times slower and was most of the spread between forks.
        System.gc();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH - 1)
    public long ack(Counters counters) throws Exception {
        long submitBefore = (long) submitNanos.invoke(workload);
        long settleBefore = (long) settleNanos.invoke(workload);
        long writes = (long) ackAll.invoke(workload);
        counters.submitMicros += ((long) submitNanos.invoke(workload) - submitBefore) / 1000;
        counters.settleMicros += ((long) settleNanos.invoke(workload) - settleBefore) / 1000;
        counters.cursorLedgerWrites += writes;
        // The first entry is acked while preparing; markDelete acks every other entry.
        counters.acks += "individual".equals(kind) ? BATCH - 1 : BATCH / 2 - 1;
        return writes;
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        close.invoke(workload);
    }
}
