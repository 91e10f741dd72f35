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

import static org.mockito.ArgumentMatchers.any;
import static org.mockito.ArgumentMatchers.isNull;
import static org.mockito.Mockito.doAnswer;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.common.api.proto.CommandAck.AckType;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/**
 * What a broker that does not know "accepted" pays for running on our managed-ledger jar (#26484): a
 * throttled ack reaches the dispatcher (afterAckMessages, which also resumes a dispatcher paused by
 * dispatcherPauseOnAckStatePersistentEnabled) only with its durable completion, one limiter period later.
 * Run on three jar sets: ours (the broker signals on "accepted": no delay), upstream (complete at once, not
 * durable: no delay) and mixed, upstream's broker jar on our managed-ledger jar, where the delay is
 * measured and must stay within one limiter period.
 */
public class AckToDispatchDelayBenchTest extends SubscriptionBenchBase {
    // Scheduling slack on a loaded 2-core machine; a delay of one factory flush (60 s) is far beyond it.
    private static final long SLACK_MILLIS = 2_000;

    @DataProvider
    public Object[][] throttledAcks() {
        // The broker default (managedLedgerDefaultMarkDeleteRateLimit) in CI, and standalone.conf's 0.1/s in the
        // long run (-Ddispatch.delay.slowRate=true: 20 s a row). The delay depends on the rate only where it is
        // measured (mixed); on ours and upstream's the dispatcher hears at once at any rate.
        Object[][] brokerDefault = {{1.0, AckType.Individual}, {1.0, AckType.Cumulative}};
        if (!"mixed".equals(System.getProperty("bench.target")) || !Boolean.getBoolean("dispatch.delay.slowRate")) {
            return brokerDefault;
        }
        return new Object[][] {brokerDefault[0], brokerDefault[1],
                {0.1, AckType.Individual}, {0.1, AckType.Cumulative}};
    }

    @Test(dataProvider = "throttledAcks", timeOut = 60_000)
    public void aThrottledAckReachesTheDispatcherWithinOneLimiterPeriod(double rate, AckType ackType)
            throws Exception {
        openThrottledSubscription(rate);
        CountDownLatch heard = new CountDownLatch(1);
        doAnswer(invocation -> {
            heard.countDown();
            return null;
        }).when(dispatcher).afterAckMessages(isNull(), any());
        // Stubbing can outlast a limiter period and leave a permit for the ack below: spend it.
        markDeleteTakingThePermit(p.get(2), Map.of());
        long periodMillis = (long) (1000 / rate);

        long start = System.nanoTime();
        subscription.acknowledgeMessage(List.of(p.get(ackType == AckType.Individual ? 3 : 6)), ackType, Map.of());
        assertTrue(heard.await(periodMillis + SLACK_MILLIS, TimeUnit.MILLISECONDS),
                "the dispatcher did not hear of the ack within one limiter period (" + periodMillis + " ms)");
        long delayMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        System.out.printf("[%s jars] ack-to-dispatch delay, %s ack at %.1f mark-deletes/s: %d ms (period %d ms)%n",
                System.getProperty("bench.target"), ackType, rate, delayMillis, periodMillis);
    }
}
