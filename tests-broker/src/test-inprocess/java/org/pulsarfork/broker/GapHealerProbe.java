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

import java.util.concurrent.TimeUnit;
import org.apache.pulsar.broker.PulsarService;
import org.apache.pulsar.broker.service.persistent.PersistentReplicator;
import org.apache.pulsar.broker.service.persistent.PersistentTopic;
import org.apache.pulsar.broker.service.persistent.ReplicationGapHealer;

/**
 * Reads our replicator's gap counts. A class of its own so that the bench class links against upstream's
 * broker jar, which has no ReplicationGapHealer: only fork-only steps load this one.
 */
final class GapHealerProbe {
    private GapHealerProbe() {
    }

    static long healed(PulsarService source, String topic, String remoteCluster) throws Exception {
        return healer(source, topic, remoteCluster).getHealedCount();
    }

    static long held(PulsarService source, String topic, String remoteCluster) throws Exception {
        return healer(source, topic, remoteCluster).getHeldCount();
    }

    private static ReplicationGapHealer healer(PulsarService source, String topic, String remoteCluster)
            throws Exception {
        PersistentTopic persistentTopic = (PersistentTopic) source.getBrokerService().getTopic(topic, false)
                .get(10, TimeUnit.SECONDS).orElseThrow();
        return ((PersistentReplicator) persistentTopic.getReplicators().get(remoteCluster)).getGapHealer();
    }
}
