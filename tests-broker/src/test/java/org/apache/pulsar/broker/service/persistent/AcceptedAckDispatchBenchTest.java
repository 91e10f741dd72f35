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
import static org.mockito.Mockito.times;
import static org.mockito.Mockito.verify;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import java.util.List;
import java.util.Map;
import org.apache.pulsar.common.api.proto.CommandAck.AckType;
import org.testng.annotations.Test;

/**
 * Dispatch must not wait for a throttled ack's write: the dispatcher's checks (ack holes,
 * dispatcherPauseOnAckStatePersistentEnabled) read the cursor's in-memory state, which the ack changed at
 * once. Upstream signals the dispatcher at once because it reports the ack complete at once; our
 * managed-ledger reports it complete only once durable, and our broker signals on "accepted". A control:
 * it passes on both jar sets, and fails with our managed-ledger jar under upstream's broker jar (the
 * dispatcher then hears of the ack one limiter period later).
 */
public class AcceptedAckDispatchBenchTest extends SubscriptionBenchBase {

    @Test(timeOut = 60_000)
    public void theDispatcherHearsOfAThrottledIndividualAckAtOnce() throws Exception {
        openThrottledSubscription();
        subscription.acknowledgeMessage(List.of(p.get(3)), AckType.Individual, Map.of());

        verify(dispatcher, times(1)).afterAckMessages(isNull(), any());
        assertTrue(cursor.isMessageDeleted(p.get(3)));
        assertEquals(crashAndRecover().isMessageDeleted(p.get(3)), false, "throttled: nothing written yet");
    }

    @Test(timeOut = 60_000)
    public void theDispatcherHearsOfAThrottledCumulativeAckAtOnce() throws Exception {
        openThrottledSubscription();
        subscription.acknowledgeMessage(List.of(p.get(6)), AckType.Cumulative, Map.of());

        verify(dispatcher, times(1)).afterAckMessages(isNull(), any());
        assertEquals(cursor.getMarkDeletedPosition(), p.get(6));
        assertEquals(crashAndRecover().getMarkDeletedPosition(), p.get(1), "throttled: nothing written yet");
    }
}
