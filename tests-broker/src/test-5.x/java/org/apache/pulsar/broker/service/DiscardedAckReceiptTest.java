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
package org.apache.pulsar.broker.service;

import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import org.apache.pulsar.client.api.PulsarClient;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/** 5.0.0-M1 twin of the 4.x in-process DiscardedAckReceiptBenchTest (#23261), on a {@link MockBookKeeperBroker}. */
public class DiscardedAckReceiptTest {
    private MockBookKeeperBroker broker;

    @BeforeMethod(alwaysRun = true)
    public void startBroker() throws Exception {
        broker = MockBookKeeperBroker.start(conf -> { });
    }

    @AfterMethod(alwaysRun = true)
    public void stopBroker() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 120_000)
    public void anAckForAConsumerTheBrokerDoesNotKnowIsAnswered() throws Exception {
        try (PulsarClient client = DiscardedAckReceiptSteps.client(broker.pulsar.getBrokerServiceUrl())) {
            DiscardedAckReceiptSteps.anAckForAConsumerTheBrokerDoesNotKnowIsAnswered(client,
                    "persistent://prop/ns/discarded-ack");
        }
    }
}
