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
package org.pulsarfork.broker;

import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import org.apache.pulsar.broker.auth.MockedPulsarServiceBaseTest;
import org.apache.pulsar.broker.service.DiscardedAckReceiptSteps;
import org.apache.pulsar.client.api.PulsarClient;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

/** An ack the broker discards is answered when a receipt was requested (#23261): {@link DiscardedAckReceiptSteps}. */
public class DiscardedAckReceiptBenchTest extends MockedPulsarServiceBaseTest {
    @BeforeMethod(alwaysRun = true)
    @Override
    protected void setup() throws Exception {
        internalSetup();
        InProcessNamespace.create(admin, pulsar.getWebServiceAddress());
    }

    @AfterMethod(alwaysRun = true)
    @Override
    protected void cleanup() throws Exception {
        internalCleanup();
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 120_000)
    public void anAckForAConsumerTheBrokerDoesNotKnowIsAnswered() throws Exception {
        try (PulsarClient client = DiscardedAckReceiptSteps.client(pulsar.getBrokerServiceUrl())) {
            DiscardedAckReceiptSteps.anAckForAConsumerTheBrokerDoesNotKnowIsAnswered(client,
                    "persistent://fork/ns/discarded-ack");
        }
    }
}
