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
package org.pulsarfork.dropin;

import static org.pulsarfork.bench.BenchGroups.FORK_ONLY;
import static org.pulsarfork.dropin.Commands.LINE;
import static org.testng.Assert.assertEquals;
import java.util.Map;
import java.util.TreeMap;
import org.apache.pulsar.client.api.PulsarClient;
import org.testng.SkipException;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Ack receipts that mean durable, in a real process: the traffic of {@link StandaloneKill9Test}'s scenario a
 * (200 messages acked with receipts on a Shared and a Failover subscription under standalone.conf's 0.1/s
 * mark-delete limiter), then kill -9 as soon as the last receipt arrived, not one limiter period later. On 4.0.8
 * and 4.2.4 both homes get {@code ackReceiptWaitsForPersistence=true} (upstream's broker ignores the key); on
 * 5.0.0-M1 none is needed. Ours must redeliver nothing a receipt answered. Upstream's count is the check that the
 * kill came before the writes: when it redelivers nothing either, the run did not reach its state and is reported
 * skipped ("inconclusive"), not passed. A long run ({@code -Dstandalone.long=true}, README).
 */
@Test(groups = FORK_ONLY)
public class StandaloneDurableReceiptTest {
    private StandaloneHomes homes;

    @BeforeClass(groups = FORK_ONLY)
    public void unpack() throws Exception {
        homes = StandaloneHomes.unpack("standalone-receipt", "standalone.long", false);
    }

    public void aKill9RightAfterTheLastAckReceiptRedeliversNothingReceiptedOnOurs() throws Exception {
        Map<String, int[]> redelivered = new TreeMap<>();
        for (String jars : new String[] {"upstream", "ours"}) {
            redelivered.put(jars, killRightAfterReceipts(jars));
            System.out.printf("[standalone %s, %s jars, receipts after persistence] acked with a receipt before"
                            + " kill -9: %d individually (shared), %d cumulatively (failover); redelivered after the"
                            + " restart: %d and %d%n", LINE, jars, StandaloneKill9Test.ThrottledAcks.MESSAGES + 1,
                    StandaloneKill9Test.ThrottledAcks.MESSAGES + 1, redelivered.get(jars)[0],
                    redelivered.get(jars)[1]);
        }
        assertEquals(redelivered.get("ours")[0], 0, "ours: individually acked messages redelivered after kill -9");
        assertEquals(redelivered.get("ours")[1], 0, "ours: cumulatively acked messages redelivered after kill -9");
        int[] upstream = redelivered.get("upstream");
        if (upstream[0] + upstream[1] == 0) {
            throw new SkipException("inconclusive: upstream redelivered nothing either, so the kill did not come"
                    + " before the throttled acks' writes");
        }
    }

    /** Redelivered after the restart: {individually acked, cumulatively acked}. */
    private int[] killRightAfterReceipts(String jars) throws Exception {
        Standalone broker = new Standalone(homes.home(jars, "receipt-" + jars));
        if (!LINE.startsWith("5.")) {
            broker.configure("ackReceiptWaitsForPersistence=true");
        }
        StandaloneKill9Test.ThrottledAcks acks = new StandaloneKill9Test.ThrottledAcks("receipted-" + jars);
        try {
            broker.start();
            try (PulsarClient client = broker.client()) {
                acks.publishAndAck(client,
                        () -> broker.get("/admin/v2/persistent/public/default/" + acks.topic + "/internalStats"));
            }
            broker.kill9();
            broker.start();
            try (PulsarClient client = broker.client()) {
                Standalone.publishSentinel(client, acks.topic);
                return new int[] {acks.redelivered(client, StandaloneKill9Test.ThrottledAcks.SHARED),
                        acks.redelivered(client, StandaloneKill9Test.ThrottledAcks.CUMULATIVE)};
            }
        } finally {
            broker.kill9();
        }
    }
}
