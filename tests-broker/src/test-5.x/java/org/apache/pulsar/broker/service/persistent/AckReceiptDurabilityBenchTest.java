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
package org.apache.pulsar.broker.service.persistent;

import static org.awaitility.Awaitility.await;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.isNull;
import static org.mockito.Mockito.times;
import static org.mockito.Mockito.verify;
import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.broker.service.AcceptedAckFuture;
import org.apache.pulsar.common.api.proto.CommandAck.AckType;
import org.testng.annotations.Test;

/**
 * 5.0's ack receipts (requirePersistedAck): Consumer.messageAcked answers the client when the future of
 * PersistentSubscription.acknowledgeMessageAsync completes, so that future must mean "persisted". Upstream
 * completes it for a throttled ack that nothing wrote; ours completes it after the write, within one
 * limiter period, while dispatch and the consumer's pending acks go on at once.
 */
public class AckReceiptDurabilityBenchTest extends SubscriptionBenchBase {
    // The broker default (managedLedgerDefaultMarkDeleteRateLimit): the next permit is one second away.
    private static final double DEFAULT_RATE = 1.0;

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void anIndividualAckWithReceiptCompletesOnlyOnceWritten() throws Exception {
        openThrottledSubscription();
        CompletableFuture<Void> receipt =
                subscription.acknowledgeMessageAsync(List.of(p.get(3)), AckType.Individual, Map.of());
        if (receipt.isDone()) {
            assertTrue(crashAndRecover().isMessageDeleted(p.get(3)),
                    "an ack receipt was sent for an ack that a crash loses");
        }
        assertFalse(receipt.isDone(), "throttled: not written yet");

        cursor.close();
        receipt.get(10, TimeUnit.SECONDS);
        assertTrue(crashAndRecover().isMessageDeleted(p.get(3)), "a receipted ack survives a crash");
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 60_000)
    public void aCumulativeAckWithReceiptCompletesOnlyOnceWritten() throws Exception {
        openThrottledSubscription();
        CompletableFuture<Void> receipt =
                subscription.acknowledgeMessageAsync(List.of(p.get(6)), AckType.Cumulative, Map.of());
        if (receipt.isDone()) {
            assertEquals(crashAndRecover().getMarkDeletedPosition(), p.get(6),
                    "an ack receipt was sent for an ack that a crash loses");
        }
        assertFalse(receipt.isDone(), "throttled: not written yet");

        cursor.close();
        receipt.get(10, TimeUnit.SECONDS);
        assertEquals(crashAndRecover().getMarkDeletedPosition(), p.get(6), "a receipted ack survives a crash");
    }

    /** No flush, no close: the cursor's own write, one limiter period later. Prints the receipt's latency. */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void aThrottledReceiptArrivesWithinOneLimiterPeriod() throws Exception {
        openThrottledSubscription(DEFAULT_RATE);
        long start = System.nanoTime();
        CompletableFuture<Void> receipt =
                subscription.acknowledgeMessageAsync(List.of(p.get(3)), AckType.Individual, Map.of());
        assertFalse(receipt.isDone(), "throttled: not written yet");

        await().atMost(Duration.ofSeconds(10)).until(receipt::isDone);
        receipt.get();
        long millis = Duration.ofNanos(System.nanoTime() - start).toMillis();
        System.out.printf("[measure] 5.0 ack receipt of a throttled ack at 1 write/s: %d ms%n", millis);
        assertTrue(millis < 2_000, "one limiter period (1 s) and the write, took " + millis + " ms");
        assertTrue(crashAndRecover().isMessageDeleted(p.get(3)), "a receipted ack survives a crash");
    }

    /** What Consumer uses for acks without a receipt: the applied stage, complete at once. */
    @Test(groups = FORK_ONLY, timeOut = 60_000)
    public void aThrottledAckIsAppliedAtOnceAndDispatchGoesOn() throws Exception {
        openThrottledSubscription();
        CompletableFuture<Void> receipt =
                subscription.acknowledgeMessageAsync(List.of(p.get(3)), AckType.Individual, Map.of());

        assertTrue(AcceptedAckFuture.appliedStage(receipt).isDone(), "pending acks are freed at once");
        assertFalse(receipt.isDone(), "the receipt waits for the write");
        verify(dispatcher, times(1)).afterAckMessages(isNull(), any());
    }
}
